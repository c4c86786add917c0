package checker

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// A long history is checked in segments, never all in memory (issue 19):
//
//	file ──ReadSegments──> segments ──workers (GOMAXPROCS)──> parts ──merge, in order──> Outcome
//
// history.ReadSegments cuts the history where no acquisition is held, carrying the acquires still
// waiting into the next segment, where the checker approves (cuttable: the lock's state there is
// certain). Each worker checks one segment as CheckRun checks a history — exclusion, the porcupine
// checks from the state the previous segment ended in (cut.go), counts, the danger windows of the
// faults started so far — and the merger runs the sweeps that go through the whole run in order
// (illegal grants, lost updates, fences, stalls) from the state the previous segment left, and
// puts the violations in CheckRun's order. A segment's windows all end before the cut and the next
// one's start after it, so no overlap is split by a cut.
//
// What the segments cannot decide exactly as CheckRun stops them, and the history is read and
// checked whole as before: more than one lock, a cut whose waiters turn out not to fit, a grant or
// a lost update against the previous segment's last, an illegal grant only porcupine finds, a
// stuck run, a porcupine timeout, a fault that failed only when it healed after a cut.

var (
	// streamFrom is the size in bytes from which a history is checked in segments.
	streamFrom int64 = 64 << 20
	// segmentOps is the fewest operations of a segment.
	segmentOps = 20_000
)

// errUnclean stops a segmented check that cannot decide as CheckRun would.
var errUnclean = errors.New("checker: the history needs the whole check")

// CheckReader checks the history r of size bytes: a history under 64 MB is read whole and
// checked by CheckRun; a longer one is checked in segments as it is read, with the same result
// (and read again whole when the segments cannot decide as CheckRun would, see above). It
// returns the run the reports draw — the whole history, or for one checked in segments the
// segment of its first violation (else its first), with a warning that says so — and the outcome.
func CheckReader(r io.ReadSeeker, size int64, opts Options) (*history.Run, *Outcome, error) {
	if size >= streamFrom {
		h, out, err := checkSegments(r, opts, segmentOps)
		if !errors.Is(err, errUnclean) && !errors.Is(err, history.ErrUnsegmentable) {
			return h, out, err
		}
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return nil, nil, fmt.Errorf("history: %w", err)
		}
	}
	h, err := history.ReadRun(r, size)
	if err != nil {
		return nil, nil, err
	}
	return h, CheckRun(h, opts), nil
}

// segJob is one segment on its way through the workers.
type segJob struct {
	seg  *history.Segment
	prev *segJob
	exit chan segExit // the states at its cut, sent first
	done chan *segPart
}

type segExit struct {
	lock          lockExit
	value         int64
	lockOk, resOk bool
}

// segPart is what a worker found in one segment.
type segPart struct {
	r        *run
	unclean  bool
	lock     string // the segment's lock name ("" if it has no acquire)
	res      Result // counts of the segment
	lat      []int64
	writes   int
	granted  map[int]bool
	resOps   []porcupine.Operation
	stalls   []stallEvent
	overlaps []overlap
	lockCk   Check
	resCk    Check
	lockLin  *Linearization
	resLin   *Linearization
	ws       []window
}

func checkSegments(in io.Reader, opts Options, minOps int) (*history.Run, *Outcome, error) {
	began := time.Now()
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *segJob)
	order := make(chan *segJob, workers) // bounds the segments in flight
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				p := checkSegment(j, opts, &stop)
				j.seg, j.prev = nil, nil // the next job holds this one: let its segment go
				j.done <- p
			}
		}()
	}
	m := merger{opts: opts}
	merged := make(chan struct{})
	go func() {
		defer close(merged)
		for j := range order {
			p := <-j.done
			if !stop.Load() && !m.add(p) {
				stop.Store(true)
			}
		}
	}()
	var prev *segJob
	h, err := history.ReadSegments(in, minOps, cuttable(opts), func(seg *history.Segment) error {
		if stop.Load() {
			return errUnclean
		}
		j := &segJob{seg: seg, prev: prev, exit: make(chan segExit, 1), done: make(chan *segPart, 1)}
		prev = j
		order <- j
		jobs <- j
		return nil
	})
	close(jobs)
	close(order)
	<-merged
	wg.Wait()
	if err != nil {
		return nil, nil, err
	}
	if stop.Load() {
		return nil, nil, errUnclean
	}
	return m.finish(h, began)
}

// checkSegment checks one segment; the sweeps through the whole run are left to the merger.
func checkSegment(j *segJob, opts Options, stop *atomic.Bool) *segPart {
	seg := j.seg
	r := newRun(&history.Run{Meta: seg.Meta, Ops: seg.Ops, Faults: seg.Faults, End: seg.End}, opts)
	p := &segPart{r: r, granted: map[int]bool{}}
	// The states at the cut, which the next segment waits for: computed first, and without
	// waiting for the previous segment's unless this one has no resource operation.
	ex := segExit{}
	ex.lock, ex.lockOk = r.lockExit(seg.Cut)
	resOps := r.resourceOps()
	if len(resOps) > 0 {
		ex.value, ex.resOk = resourceExit(resOps, seg.Cut)
		j.exit <- ex
	}
	var from *segExit
	if j.prev != nil {
		f := <-j.prev.exit
		from = &f
		first := int64(0)
		if len(resOps) > 0 {
			first = resOps[0].Call
		}
		init := porcupine.Operation{Input: resInput{kind: resInit, v: f.value, read: -1, write: -1}, Call: first - 1, Return: first - 1}
		resOps = append([]porcupine.Operation{init}, resOps...)
	}
	if len(resOps) == 0 || (from != nil && len(resOps) == 1) {
		ex.value, ex.resOk = 0, true
		if from != nil {
			ex.value, ex.resOk = from.value, from.resOk
		}
		j.exit <- ex
	}

	p.unclean = len(r.warnings) > 0 || stop.Load() ||
		(from != nil && (!from.lockOk || !from.resOk || !r.waitersFit(seg.Carried, from.lock)))
	for i := range r.ops {
		o := &r.ops[i]
		if o.Acq != 0 {
			if _, ok := r.acquireOf(o); !ok {
				p.unclean = true // it may be an acquire of another segment
			}
		}
		if o.Op == history.OpAcquire {
			if p.lock != "" && o.Lock != p.lock {
				p.unclean = true
			}
			p.lock = o.Lock
		}
	}
	if p.unclean {
		return p
	}
	if from != nil {
		r.lockFrom = &from.lock
	}
	verbose := j.prev == nil && !opts.SkipVisualization
	h, parts := r.lockHistory()
	r.lockOps, r.lockParts = h, parts
	p.lockCk, p.lockLin = r.linearize(lockModel(parts), h, func(in any) int { return in.(lockInput).part }, verbose)
	rh, rparts := segment(resOps)
	p.resCk, p.resLin = r.linearize(resourceModel(rparts), rh, func(in any) int { return in.(resInput).part }, verbose)
	p.ws = r.windows()
	p.overlaps = r.exclusion(p.ws)
	if p.lockCk.Result == string(porcupine.Unknown) || p.resCk.Result == string(porcupine.Unknown) {
		p.unclean = true // a timeout: the whole check says what it says
		return p
	}
	p.lat, p.writes = r.tally(&p.res)
	// The faults that started before the cut are known, and a time in the segment is before both
	// the cut and the end of any fault still going on there: the danger windows are exact for it.
	r.evidenceCounts(&p.res, inWindowOf(attacksOf(r.occurrences())), p.granted)
	for i := range r.ops {
		if w := &r.ops[i]; w.Op == history.OpWrite && w.Ok() {
			if j, ok := r.acquireOf(w); ok && expiredWrite(&r.ops[j], w) {
				p.res.ExpiredWrites++
			}
		}
	}
	p.resOps = resOps
	p.stalls = r.stallEvents(seg.Start, seg.Waiting)
	return p
}

// keptViolations is how many violations of a long run the analysis keeps (the earliest, in
// whole segments); the counts and classes cover them all.
const keptViolations = 1000

// merger puts the segments' parts together, in order.
type merger struct {
	opts    Options
	n       int
	first   *segPart
	lock    string
	res     Result
	lat     []int64
	writes  int
	ops     int
	granted map[int]bool
	grants  grantCarry
	lost    lostCarry
	fences  fenceCarry
	sweep   stallSweep
	lockMs  float64
	resMs   float64
	last    *run

	// Violations: the earliest ones, every class's first (AtMs, then order found, as the sort
	// of CheckRun breaks ties), the counts, and the segments that show the first of each kind.
	vs                 []Violation
	firstOf            map[Class][2]float64
	found              int
	nGrants, nOverlaps int
	lockIllegal        bool
	lostProven         bool
	lostV, fenceV      *Violation
	lostClass          *Class
	vseg, lostSeg      *segPart
	fenceSeg           *segPart

	// Faults: those still going on at some cut (with their error then), the kept violations whose cause waits for the end
	// of one of them, and the stalls, cut by the faults at the end.
	ongoing   map[int64]string // fault id → its error then
	causeEnds []causeEnd
	longest   time.Duration // of the stall pieces known
	long      []int64       // starts of pieces long enough to be stuck if after the last heal
	deferred  []stall       // stalls a fault still going on at their segment's cut may cut
}

// stalls cuts the stalls of segment r into the pieces outside the faults (plus grace) that
// started before its cut. A fault still going on there that started before a stall ended cuts it
// where only its end will say: that stall waits for the end.
func (m *merger) stalls(r *run, stalls []stall) {
	ex := r.excluded()
	for _, st := range stalls {
		if slices.ContainsFunc(r.faults, func(f history.FaultSpan) bool { return f.End == history.Never && f.Start < st.end }) {
			m.deferred = append(m.deferred, stall{start: st.start, end: st.end, waiter: -1, prev: -1})
			continue
		}
		for _, p := range subtract(st.start, st.end, ex) {
			d := time.Duration(p[1] - p[0])
			m.longest = max(m.longest, d)
			if d >= r.opts.StuckAfter {
				m.long = append(m.long, p[0])
			}
		}
	}
}

// causeEnd is a kept violation (index in merger.vs) whose cause ends with a fault's end.
type causeEnd struct {
	v     int
	fault int64
}

// add merges the next part, and reports whether the run can still be decided in segments.
func (m *merger) add(p *segPart) bool {
	if p.unclean {
		return false
	}
	if m.n == 0 {
		m.first, m.granted, m.firstOf, m.ongoing = p, map[int]bool{}, map[Class][2]float64{}, map[int64]string{}
		m.sweep.start()
	}
	m.n++
	if p.lock != "" {
		if m.lock != "" && p.lock != m.lock {
			return false
		}
		m.lock = p.lock
	}
	r := p.r
	var g []grant
	g, m.grants = r.grantsFrom(m.grants)
	for _, x := range g {
		if x.a < 0 {
			return false // granted while the previous segment's last holder held: the whole check names it
		}
	}
	lost, lostV := r.lostFrom(p.resOps, m.lost)
	if lost.lost && !m.lost.lost && lostV == nil {
		return false // lost against the previous segment's last write
	}
	m.lost = lost
	var fenceV *Violation
	m.fences, fenceV = r.fencesFrom(m.fences)
	m.sweep.feed(p.stalls)
	m.stalls(r, m.sweep.take())
	for _, f := range r.faults {
		if f.End == history.Never {
			m.ongoing[f.ID] = f.Error
		}
	}
	m.lockIllegal = m.lockIllegal || p.lockCk.Result == string(porcupine.Illegal)
	m.lostProven = m.lostProven || p.resCk.Result == string(porcupine.Illegal)

	vs, illegal, causeOf := r.grantViolations(g, m.nGrants)
	ovs, excl := r.overlapViolations(p.overlaps, illegal, causeOf, false)
	for i, ov := range p.overlaps {
		// A client's cause names the fault that held it, and when that ended: if it had not
		// ended by the cut, the end is added at the end.
		if excl[i] == ClientClass && ov.aEnd >= 0 && len(m.vs) < keptViolations {
			f := r.faultDuring(r.ops[ov.a].Client, r.ops[ov.a].Return, r.ops[ov.aEnd].Call)
			if f != nil && f.End == history.Never {
				m.causeEnds = append(m.causeEnds, causeEnd{v: len(m.vs) + len(vs) + i, fault: f.ID})
			}
		}
	}
	vs = append(vs, ovs...)
	m.nGrants += len(g)
	m.nOverlaps += len(p.overlaps)
	m.note(vs)
	if len(m.vs) < keptViolations {
		m.vs = append(m.vs, vs...)
	}
	keep := false
	if len(vs) > 0 && m.vseg == nil {
		m.vseg, keep = p, true
	}
	if lostV != nil {
		m.lostV, m.lostSeg, keep = lostV, p, true
		if c, ok := r.overlapClass(lostV, p.overlaps, excl); ok {
			m.lostClass = &c
		}
	}
	if fenceV != nil {
		m.fenceV, m.fenceSeg, keep = fenceV, p, true
	}

	c := &m.res
	c.AcquiresOk += p.res.AcquiresOk
	c.AcquiresFailed += p.res.AcquiresFailed
	c.StaleWritesRejected += p.res.StaleWritesRejected
	c.WritesOk += p.res.WritesOk
	c.WritesRejected += p.res.WritesRejected
	c.WritesInWindow += p.res.WritesInWindow
	c.GrantsInWindow += p.res.GrantsInWindow
	c.ExpiredWrites += p.res.ExpiredWrites
	m.lat = append(m.lat, p.lat...)
	m.writes += p.writes
	m.ops += len(r.ops)
	for k := range p.granted {
		m.granted[k] = true
	}
	m.lockMs += p.lockCk.Ms
	m.resMs += p.resCk.Ms
	m.last = r
	if p != m.first && !keep {
		p.lockLin, p.resLin, p.ws = nil, nil, nil // only the segments drawn keep what is drawn
	}
	p.resOps, p.stalls, p.overlaps = nil, nil, nil
	return true
}

// note records the first violation of each class, in the order CheckRun's sort puts them.
func (m *merger) note(vs []Violation) {
	for _, v := range vs {
		k := [2]float64{v.AtMs, float64(m.found)}
		m.found++
		if f, ok := m.firstOf[v.Class]; !ok || k[0] < f[0] {
			m.firstOf[v.Class] = k
		}
	}
}

// finish makes the outcome, as CheckRun would.
func (m *merger) finish(h *history.Run, began time.Time) (*history.Run, *Outcome, error) {
	if m.first == nil || (m.lockIllegal && m.nGrants == 0) {
		return nil, nil, errUnclean // an illegal grant only porcupine found: locating it needs the whole lock history
	}
	m.last.end = h.End
	m.stalls(m.last, m.sweep.finish(h.End))
	// The whole run without its operations: its faults, as they are at its end.
	r := &run{meta: h.Meta, opts: m.opts.withDefaults(h.Meta), end: h.End, faults: h.Faults, unfired: h.Unfired}
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
	out := &Outcome{Result: newResult(h)}
	res := &out.Result
	c := &m.res
	res.AcquiresOk, res.AcquiresFailed, res.StaleWritesRejected = c.AcquiresOk, c.AcquiresFailed, c.StaleWritesRejected
	finishCounts(res, m.lat, m.writes, m.ops, h.End)
	res.LockCheck = Check{Result: string(porcupine.Ok), Ms: m.lockMs}
	if m.lockIllegal {
		res.LockCheck.Result = string(porcupine.Illegal)
	}
	res.ResourceCheck = Check{Result: string(porcupine.Ok), Ms: m.resMs}
	if m.lostProven {
		res.ResourceCheck.Result = string(porcupine.Illegal)
	}
	res.ExclusionViolations, res.ServiceViolations = m.nOverlaps, m.nGrants
	res.LostUpdates = m.lost.count()
	res.FenceRegressions = m.fences.regressions
	res.ExpiredWrites = c.ExpiredWrites
	res.LongestStallMs = ms(int64(longest))
	for _, f := range r.faults {
		if f.Error != "" {
			res.FaultErrors = append(res.FaultErrors, fmt.Sprintf("fault %d %s on %s: %s", f.ID, f.Name, f.Target, f.Error))
		}
	}

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
	for cl := range m.firstOf {
		res.ClassesSeen = append(res.ClassesSeen, cl)
	}
	slices.SortFunc(res.ClassesSeen, func(x, y Class) int {
		fx, fy := m.firstOf[x], m.firstOf[y]
		return cmp.Or(cmp.Compare(fx[0], fy[0]), cmp.Compare(fx[1], fy[1]))
	})

	res.WritesOk, res.WritesRejected = c.WritesOk, c.WritesRejected
	res.WritesInWindow, res.GrantsInWindow = c.WritesInWindow, c.GrantsInWindow
	evidence := r.evidence(res, r.unfired, m.granted)
	res.Evidence = evidence
	decide(res, vs, nil, "", evidence)
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

	drawn := &history.Run{Meta: h.Meta, Ops: f.r.ops, Faults: h.Faults, Unfired: h.Unfired, End: h.End, Warnings: h.Warnings}
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
