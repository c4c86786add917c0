package checker

import (
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

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
	heldNs  int64
	ops     int
	granted map[int]bool
	reach   map[int64]int64
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
	// When add leaves a part to the whole check: why, and the violations the part shows without
	// the state it started from — its overlapping holders, and a grant or a lost update against
	// the previous segment's state — how many, and the earliest (ms; -1: none).
	why      string
	left     int
	leftAtMs float64

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

func newMerger(opts Options) *merger { return &merger{opts: opts} }

// leave notes why add leaves p to the whole check, and the violations p shows on its own: its
// overlapping holders (facts of its own operations), and one against the previous segment's state
// at acrossNs (-1: none). It returns false, for add to return.
func (m *merger) leave(p *segPart, why string, acrossNs int64) bool {
	m.why, m.left, m.leftAtMs = why, len(p.overlaps), -1
	for _, ov := range p.overlaps {
		if m.leftAtMs < 0 || ms(ov.at) < m.leftAtMs {
			m.leftAtMs = ms(ov.at)
		}
	}
	if acrossNs >= 0 {
		m.left++
		if m.leftAtMs < 0 || ms(acrossNs) < m.leftAtMs {
			m.leftAtMs = ms(acrossNs)
		}
	}
	return false
}

// add merges the next part, and reports whether the run can still be decided in segments.
func (m *merger) add(p *segPart) bool {
	if p.unclean != "" {
		return m.leave(p, p.unclean, -1)
	}
	if m.n == 0 {
		m.first, m.granted, m.reach, m.firstOf, m.ongoing = p, map[int]bool{}, map[int64]int64{}, map[Class][2]float64{}, map[int64]string{}
		m.sweep.start()
	}
	m.n++
	if p.lock != "" {
		if m.lock != "" && p.lock != m.lock {
			return m.leave(p, "its lock is not the previous segments'", -1)
		}
		m.lock = p.lock
	}
	r := p.r
	var g []grant
	g, m.grants = r.grantsFrom(m.grants)
	for _, x := range g {
		if x.a < 0 {
			// Granted while the previous segment's last holder held: the whole check names it.
			return m.leave(p, "an acquire was granted while the previous segment's last holder held", r.ops[x.b].Return)
		}
	}
	lost, lostV := r.lostFrom(p.resOps, m.lost)
	if lost.lost && !m.lost.lost && lostV == nil {
		return m.leave(p, "an update was lost against the previous segment's last write", lost.lostAt)
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
	unbacked := r.unbackedGrants()
	p.res.UnbackedGrants = len(unbacked)
	vs = append(vs, unbacked...)
	r.blame(vs)
	r.blameEach(lostV, fenceV) // kept apart from vs, blamed as the whole check blames them
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
	c.UnbackedGrants += p.res.UnbackedGrants
	m.lat = append(m.lat, p.lat...)
	m.writes += p.writes
	m.heldNs += p.heldNs
	m.ops += len(r.ops)
	for k := range p.granted {
		m.granted[k] = true
	}
	for id, end := range p.reach {
		m.reach[id] = max(m.reach[id], end)
	}
	m.lockMs += p.lockCk.Ms
	m.resMs += p.resCk.Ms
	m.last = r
	if p != m.first && !keep {
		p.lockLin, p.resLin, p.ws = nil, nil, nil // only the segments drawn keep what is drawn
	}
	p.resOps, p.stalls, p.overlaps = nil, nil, nil
	r.wire = nil // the causes are named: the segments kept for the drawing need no wire lines
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
