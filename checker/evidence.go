package checker

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// EvidenceOK is Result.Evidence when the run could have failed (docs/design.md#evidence).
const EvidenceOK = "ok"

// PlannedFault is one fault of the scenario and whether it fired.
type PlannedFault struct {
	Rule  int    `json:"rule"`
	Kind  string `json:"kind"`
	Point string `json:"point,omitempty"`
	Setup bool   `json:"setup,omitempty"`
	Fired bool   `json:"fired"`
	// Times is how many occurrences took effect.
	Times int `json:"times"`
	// Reason says why a fault that did not fire never did.
	Reason string `json:"reason,omitempty"`
	// Missed says, for a fault that fired, what none of its occurrences brought about
	// (docs/design.md#faults-sized-to-the-lease): the until point no other client reached before
	// its cap, or a length past the lease it was sized to outlast. Such a fault put nothing at risk: its evidence is missing.
	Missed string `json:"missed,omitempty"`
	// ActsOn and Lasting are what the fault's kind declares its occurrences do
	// (history.FaultMeaning): the reports decide from them, never from Kind.
	ActsOn  string `json:"acts_on,omitempty"`
	Lasting bool   `json:"lasting,omitempty"`
}

// UnmarshalJSON reads a planned fault, and for one written before result.json recorded what a
// fault does (no acts_on), what its kind meant then (history.KindMeaning).
func (p *PlannedFault) UnmarshalJSON(b []byte) error {
	type plain PlannedFault
	if err := json.Unmarshal(b, (*plain)(p)); err != nil {
		return err
	}
	if p.ActsOn == "" {
		m := history.KindMeaning(p.Kind)
		p.ActsOn, p.Lasting = m.ActsOn, m.Lasting
	}
	return nil
}

// FiredFault is one occurrence of a fault that took effect.
type FiredFault struct {
	Fault  int64   `json:"fault"`
	Rule   int     `json:"rule,omitempty"`
	Kind   string  `json:"kind"`
	Point  string  `json:"point,omitempty"`
	Target string  `json:"target,omitempty"`
	AtMs   float64 `json:"at_ms"`
	EndMs  float64 `json:"end_ms"` // -1 when it never ended (a crash, a kill)
	// ActsOn, Lasting, TargetClients and TargetNodes are what its history line says it did.
	ActsOn        string   `json:"acts_on,omitempty"`
	Lasting       bool     `json:"lasting,omitempty"`
	TargetClients []int    `json:"target_clients,omitempty"`
	TargetNodes   []string `json:"target_nodes,omitempty"`
}

// Span is a stretch of the run, in ms since its start.
type Span struct {
	StartMs float64 `json:"start_ms"`
	EndMs   float64 `json:"end_ms"`
}

// occurrence is a fired fault with its danger window, in ns.
type occurrence struct {
	span          *history.FaultSpan
	setup         bool
	clients       []int // the clients it targets (they are not "others" for contention)
	start, danger int64 // the danger window [start, danger)
}

// occurrences returns the fault occurrences that took effect, each with its danger window: from
// its start until one lease (the TTL, or the session timeout when longer) after it healed, or
// the run's end when it never healed or what it did lasts the run (a crash, a node killed for
// good) — and on to the write of every client granted the lock inside the window (extend): the
// grant contended the attacked holder's lease, so its write is at risk whenever it comes. A
// fault's arming and the harness's own stalls are not occurrences: nothing attacked the lock
// there.
func (r *run) occurrences() []occurrence {
	lease := max(r.meta.TTLNs, r.meta.SessionTimeoutNs)
	var out []occurrence
	for i := range r.faults {
		f := &r.faults[i]
		if f.Error != "" || f.Arm || f.ActsOn == history.ActsOnHarness {
			continue
		}
		o := occurrence{span: f, start: f.Start, danger: r.end}
		// A kill is instant in the history, but its node stays dead: its danger lasts the run.
		if f.End != history.Never && !f.Lasting {
			o.danger = min(f.End+lease, r.end)
		}
		if f.Rule > 0 && f.Rule <= len(r.meta.Faults) {
			o.setup = r.meta.Faults[f.Rule-1].Setup
		}
		o.clients = f.TargetClients
		o.danger = r.extend(o)
		out = append(out, o)
	}
	return out
}

// extend is the end of o's danger window measured from the run: past its fixed end (a lease
// after the heal) to the first write of each holder another client than o's targets was granted
// inside the window. A holder granted as the lease ran out, under a hold longer than the lease
// (etcd's partition: granted at 1.4 s, its write at 3.9 s, the window's fixed end at 3.1 s), writes
// where a late write of the attacked holder would meet it: that write is the evidence that the
// fault put something at risk, not a write after the danger.
//
// It looks at the grants inside the window only (grantWrites, built once per run): the evidence,
// each blame and a segment's reach ask for every occurrence, and a walk over every operation for
// each made a long history with many faults pay occurrences × operations several times.
func (r *run) extend(o occurrence) int64 {
	end := max(o.danger, r.reach[o.span.ID])
	gw := r.grantWrites()
	i, _ := slices.BinarySearchFunc(gw, o.start, func(g grantWrite, t int64) int { return cmp.Compare(g.at, t) })
	for ; i < len(gw) && gw[i].at < o.danger; i++ {
		if g := gw[i]; g.last >= o.danger && !slices.Contains(o.clients, g.client) {
			end = max(end, g.last+1)
		}
	}
	return end
}

// grantWrite is a granted acquisition (by its grant's time) and the latest call of a write made
// under it (-1 when none was).
type grantWrite struct {
	at, last int64
	client   int
}

// grantWrites returns the run's granted acquisitions in grant order, each with its latest write,
// indexing them on the first call.
func (r *run) grantWrites() []grantWrite {
	if r.gw != nil {
		return r.gw
	}
	last := make(map[int]int64) // acquire index → latest write call
	for i := range r.ops {
		if w := &r.ops[i]; w.Op == history.OpWrite {
			if k, ok := r.idx.get(w.Acq); ok {
				if t, seen := last[k]; !seen || w.Call > t {
					last[k] = w.Call
				}
			}
		}
	}
	r.gw = []grantWrite{}
	for i := range r.ops {
		if g := &r.ops[i]; g.Op == history.OpAcquire && g.Ok() {
			t, ok := last[i]
			if !ok {
				t = -1
			}
			r.gw = append(r.gw, grantWrite{at: g.Return, last: t, client: g.Client})
		}
	}
	slices.SortStableFunc(r.gw, func(x, y grantWrite) int { return cmp.Compare(x.at, y.at) })
	return r.gw
}

// evidence fills the evidence fields of res and returns the line that says what is missing, or
// EvidenceOK. It does not look at the verdict: an unsafe run needs no evidence beyond its
// violation, and the caller decides.
//
// granted holds the clients granted the lock in other segments of the history (nil for none); the
// clients granted in r's operations are added to it.
func (r *run) evidence(res *Result, unfired []history.UnfiredFault, granted map[int]bool) string {
	occ := r.occurrences()
	planned := r.plannedFaults(occ, unfired)
	res.FaultsPlanned = planned
	res.FaultsFired = []FiredFault{}
	for _, o := range occ {
		f := o.span
		end := -1.0
		if f.End != history.Never {
			end = ms(f.End)
		}
		res.FaultsFired = append(res.FaultsFired, FiredFault{Fault: f.ID, Rule: f.Rule, Kind: f.Name, Point: f.Point,
			Target: f.Target, AtMs: ms(f.Start), EndMs: end, ActsOn: f.ActsOn, Lasting: f.Lasting,
			TargetClients: f.TargetClients, TargetNodes: f.TargetNodes})
	}
	attacks := attacksOf(occ)
	res.DangerWindows = []Span{}
	r.danger = r.danger[:0]
	for _, o := range attacks {
		res.DangerWindows = append(res.DangerWindows, Span{StartMs: ms(o.start), EndMs: ms(o.danger)})
		r.danger = append(r.danger, [2]int64{o.start, o.danger})
	}
	inWindow := inWindowOf(attacks)
	if granted == nil {
		granted = map[int]bool{}
	}
	r.evidenceCounts(res, inWindow, granted)
	for _, p := range planned {
		if !p.Fired {
			return fmt.Sprintf("fault %d (%s) never fired: %s", p.Rule, p.Kind, p.Reason)
		}
	}
	for _, p := range planned {
		if p.Missed != "" && !p.Setup {
			return fmt.Sprintf("fault %d (%s) never made the moment it aims at: %s", p.Rule, p.Kind, p.Missed)
		}
	}
	switch {
	case res.WritesOk+res.WritesRejected == 0:
		return "no client wrote the resource: nothing could have been lost"
	case len(attacks) == 0 && len(planned) > 0:
		return "only setup faults fired: nothing attacked the lock"
	case len(attacks) == 0 && len(granted) < 2:
		return "only one client was ever granted the lock: nothing was contended"
	case len(attacks) > 0 && res.WritesInWindow == 0:
		return "no write in the danger window (from each fault until one lease after it healed): the fault put nothing at risk"
	case len(attacks) > 0 && res.GrantsInWindow == 0:
		return "no other client was granted the lock in the danger window: nothing contended the faulted holder's lease"
	}
	return EvidenceOK
}

// plannedFaults pairs the meta line's planned faults with the occurrences that took effect and
// the run's unfired lines. A history without planned faults (older runs) plans what it fired.
func (r *run) plannedFaults(occ []occurrence, unfired []history.UnfiredFault) []PlannedFault {
	out := []PlannedFault{}
	if len(r.meta.Faults) == 0 {
		for _, o := range occ {
			out = append(out, PlannedFault{Kind: o.span.Name, Point: o.span.Point, Fired: true, Times: 1,
				ActsOn: o.span.ActsOn, Lasting: o.span.Lasting})
		}
		return out
	}
	for i, f := range r.meta.Faults {
		m := f.Meaning()
		p := PlannedFault{Rule: i + 1, Kind: f.Kind, Point: f.Point, Setup: f.Setup, ActsOn: m.ActsOn, Lasting: m.Lasting}
		missed := ""
		made := false
		for _, o := range occ {
			if o.span.Rule == p.Rule {
				p.Times++
				if m := missedBy(o.span); m == "" {
					made = true
				} else if missed == "" {
					missed = m
				}
			}
		}
		p.Fired = p.Times > 0
		if p.Fired && !made {
			p.Missed = missed
		}
		if !p.Fired {
			p.Reason = "the history has no record of it firing (the run may have ended early)"
			for _, u := range unfired {
				if u.Rule == p.Rule && u.Reason != "" {
					p.Reason = u.Reason
				}
			}
			for j := range r.faults {
				if fs := &r.faults[j]; fs.Rule == p.Rule && fs.Error != "" {
					p.Reason = "it could not be injected: " + fs.Error
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// missedBy says what occurrence f did not bring about, from its lines: what its end line says it
// missed, or a length, start to end, shorter than the lease its start line says it must outlast.
// "" when nothing.
func missedBy(f *history.FaultSpan) string {
	if f.Missed != "" {
		return f.Missed
	}
	if f.OutlastNs > 0 && f.End != history.Never && !f.Lasting && f.End-f.Start < f.OutlastNs {
		return fmt.Sprintf("it lasted %s, less than the lease it must outlast (%s)",
			history.FormatNs(f.End-f.Start), history.FormatNs(f.OutlastNs))
	}
	return ""
}

// attacksOf returns the occurrences that attacked the lock: all but the setup faults'.
func attacksOf(occ []occurrence) []occurrence {
	return slices.DeleteFunc(slices.Clone(occ), func(o occurrence) bool { return o.setup })
}

// inWindowOf reports whether time t falls in the danger window of one of attacks, for client (0:
// any) other than the clients that attack targets.
func inWindowOf(attacks []occurrence) func(t int64, client int) bool {
	return func(t int64, client int) bool {
		for _, o := range attacks {
			if t >= o.start && t < o.danger && (client == 0 || !slices.Contains(o.clients, client)) {
				return true
			}
		}
		return false
	}
}

// evidenceCounts counts r's writes and grants, in the danger windows (inWindow) and in all, into
// res, and adds the clients granted the lock to granted.
func (r *run) evidenceCounts(res *Result, inWindow func(t int64, client int) bool, granted map[int]bool) {
	for i := range r.ops {
		o := &r.ops[i]
		switch {
		case o.Op == history.OpWrite:
			switch {
			case o.Ok():
				res.WritesOk++
			case staleRejected(o):
				res.WritesRejected++
			}
			if (o.Ok() || staleRejected(o)) && inWindow(o.Call, 0) {
				res.WritesInWindow++
			}
		case o.Op == history.OpAcquire && o.Ok():
			granted[o.Client] = true
			if inWindow(o.Return, o.Client) {
				res.GrantsInWindow++
			}
		}
	}
}

// blame sets each violation's Faults: the attacks whose danger window was open at it.
func (r *run) blame(vs []Violation) {
	attacks := attacksOf(r.occurrences())
	for i := range vs {
		blameAt(&vs[i], attacks)
	}
}

// blameEach is blame for violations kept one by one (nil ones skipped).
func (r *run) blameEach(vs ...*Violation) {
	attacks := attacksOf(r.occurrences())
	for _, v := range vs {
		if v != nil {
			blameAt(v, attacks)
		}
	}
}

func blameAt(v *Violation, attacks []occurrence) {
	at := int64(v.AtMs * float64(time.Millisecond))
	for _, o := range attacks {
		if at >= o.start && at < o.danger && !slices.Contains(v.Faults, o.span.ID) {
			v.Faults = append(v.Faults, o.span.ID)
		}
	}
}
