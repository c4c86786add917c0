package checker

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// finish makes the outcome, as CheckRun would.
func (m *merger) finish(h *history.Run, began time.Time) (*history.Run, *Outcome, error) {
	if m.first == nil || (m.lockIllegal && m.nGrants == 0) {
		return nil, nil, errUnclean // an illegal grant only porcupine found: locating it needs the whole lock history
	}
	m.last.end = h.End
	m.stalls(m.last, m.sweep.finish(h.End))
	// The whole run without its operations: its faults, as they are at its end.
	r := &run{meta: h.Meta, opts: m.opts.withDefaults(h.Meta), end: h.End, faults: h.Faults, wire: h.Wire, unfired: h.Unfired, reach: m.reach}
	byID := map[int64]*history.FaultSpan{}
	for i := range r.faults {
		byID[r.faults[i].ID] = &r.faults[i]
	}
	for id, e := range m.ongoing {
		if f := byID[id]; f == nil || f.Error != e {
			return nil, nil, errUnclean // it failed when it healed: the segments took it as a fault that took effect
		}
	}
	for _, ce := range m.causeEnds {
		m.vs[ce.v].Cause += faultEnd(byID[ce.fault])
	}
	longest, stuck := r.stallPieces(m.deferred)
	var lastHeal int64
	for _, e := range r.excluded() {
		lastHeal = max(lastHeal, e[1])
	}
	if stuck != nil || slices.ContainsFunc(m.long, func(t int64) bool { return t >= lastHeal }) {
		return nil, nil, errUnclean // stuck: the whole check names the waiter
	}
	longest = max(longest, m.longest)

	vs := m.vs
	var last []Violation // found after every segment's: CheckRun appends them last
	if m.lostProven && m.lostV != nil {
		v := *m.lostV
		v.Class = unlocatedLostClass(m.lockIllegal)
		if m.lostClass != nil {
			v.Class = *m.lostClass
		}
		last = append(last, v)
	} else if m.lostProven {
		last = append(last, lostUpdateViolation(unlocatedLostClass(m.lockIllegal || m.nGrants > 0)))
	}
	if m.fenceV != nil {
		last = append(last, *m.fenceV)
	}
	m.note(last)
	vs = append(vs, last...)
	slices.SortStableFunc(vs, func(x, y Violation) int { return cmp.Compare(x.AtMs, y.AtMs) })
	var classes []Class
	for cl := range m.firstOf {
		classes = append(classes, cl)
	}
	slices.SortFunc(classes, func(x, y Class) int {
		fx, fy := m.firstOf[x], m.firstOf[y]
		return cmp.Or(cmp.Compare(fx[0], fy[0]), cmp.Compare(fx[1], fy[1]))
	})

	fs := facts{r: r, granted: m.granted, counts: m.res, lat: m.lat, heldNs: m.heldNs, writes: m.writes, ops: m.ops,
		lockCheck: Check{Result: string(porcupine.Ok), Ms: m.lockMs}, resourceCheck: Check{Result: string(porcupine.Ok), Ms: m.resMs},
		overlaps: m.nOverlaps, grants: m.nGrants, lostUpdates: m.lost.count(), fenceRegressions: m.fences.regressions,
		longestStall: longest, vs: vs, classes: classes}
	if m.lockIllegal {
		fs.lockCheck.Result = string(porcupine.Illegal)
	}
	if m.lostProven {
		fs.resourceCheck.Result = string(porcupine.Illegal)
	}
	out := &Outcome{Result: newResult(h, &fs)}
	res := &out.Result
	var at int64
	if res.FirstViolation != nil {
		at = int64(res.FirstViolation.AtMs * float64(time.Millisecond))
	}

	// The segment of the first violation (else the first) is what the reports draw, and what
	// porcupine's pages show.
	f := m.first
	if res.FirstViolation != nil {
		switch k := res.FirstViolation.Kind; {
		case k == "lost-update" && m.lostSeg != nil && m.lostV != nil:
			f = m.lostSeg
		case k == "fence-regression":
			f = m.fenceSeg
		case k != "lost-update" && m.vseg != nil:
			f = m.vseg
		}
	}
	if !m.opts.SkipVisualization {
		for _, x := range []struct {
			lin *Linearization
			c   *Check
		}{{f.lockLin, &res.LockCheck}, {f.resLin, &res.ResourceCheck}} {
			switch {
			case !reflect.ValueOf(x.lin.Info).IsZero():
			case len(x.lin.ops) <= visualizeMax:
				_, x.lin.Info = porcupine.CheckOperationsVerbose(x.lin.Model, x.lin.ops, m.opts.Timeout)
			default:
				f.r.visualize(x.lin, x.c, at)
			}
			if m.n > 1 {
				what := "a segment of the run"
				if f == m.first {
					what = "the run's first segment"
				}
				if x.c.Visualized == "" {
					x.c.Visualized = fmt.Sprintf("the %d operations checked in %s", len(x.lin.ops), what)
				} else {
					x.c.Visualized += ", in " + what
				}
			}
		}
	}
	for _, lin := range []*Linearization{f.lockLin, f.resLin} {
		if lin != nil {
			lin.ops = nil
		}
	}
	out.Lock, out.Resource = f.lockLin, f.resLin
	out.Analysis = Analysis{Holds: f.r.holds(f.ws), Leases: f.r.leases(), Violations: vs, Danger: r.danger}
	res.CheckerMs = ms(int64(time.Since(began)))

	drawn := &history.Run{Meta: h.Meta, Ops: f.r.ops, Faults: h.Faults, Unfired: h.Unfired, End: h.End, Warnings: h.Warnings, Abort: h.Abort, Stop: h.Stop, StopVerdict: h.StopVerdict}
	if m.n > 1 {
		what := "first"
		if f != m.first {
			what = "first violation's"
		}
		drawn.Warnings = append(drawn.Warnings[:len(drawn.Warnings):len(drawn.Warnings)], fmt.Sprintf(
			"the timelines and the latency histogram show the %d operations of the run's %s segment (of %d): a history this long is checked in segments, never all in memory",
			len(f.r.ops), what, m.ops))
	}
	return drawn, out, nil
}
