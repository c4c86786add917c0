package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// CheckHistory runs every check on h and returns the result.json object with porcupine's linearization
// info for the visualization. It never fails: what it cannot decide makes the verdict unknown.
//
// Verdict: unsafe if any exclusion violation, illegal grant, fence regression, proven lost
// update or grant that no reply on the wire backed; else stuck if clients waited StuckAfter with no grant after all faults healed; else
// unknown if a porcupine check ran out of time, no acquire succeeded, or the run has no evidence
// that it could have failed (docs/design.md#evidence: a planned fault that never fired, no write, no write
// or other client's grant in the danger window); else safe.
//
// (It is not called Check: Check is the result.json type of one porcupine check.)
func CheckHistory(h *history.History, opts Options) *Outcome { return CheckRun(h.Run(), opts) }

// CheckRun is CheckHistory on a history already paired (history.ReadRunFile reads one without
// keeping its lines). It may clamp h's operations that complete before their invocation.
func CheckRun(h *history.Run, opts Options) *Outcome {
	began := time.Now()
	r := newRun(h, opts)
	f := facts{r: r, warnings: r.warnings, ops: len(r.ops)}
	f.lat, f.writes = r.tally(&f.counts)

	// Safety.
	ws := r.windows()
	f.heldNs = heldNs(ws)
	overlaps := r.exclusion(ws)
	grants := r.illegalGrants()
	lockRes, lockLin := r.checkLock()
	resOps := r.resourceOps()
	resRes, resLin := r.checkResource(resOps)
	f.lockCheck, f.resourceCheck = lockRes, resRes
	f.overlaps, f.grants = len(overlaps), len(grants)
	lockIllegal := lockRes.Result == string(porcupine.Illegal)
	lost, lostV := r.lostUpdates(resOps)
	f.lostUpdates = lost
	lostProven := resRes.Result == string(porcupine.Illegal)

	vs, illegal, causeOf := r.grantViolations(grants, 0)
	located := true
	if lockIllegal && len(grants) == 0 {
		v := r.porcupineGrantViolation(lockLin)
		if j, ok := r.idx.get(v.B.ID); ok && v.B.ID != 0 {
			illegal[j] = true
		} else {
			located = false
		}
		vs = append(vs, v)
	}
	ovs, excl := r.overlapViolations(overlaps, illegal, causeOf, lockIllegal && !located)
	vs = append(vs, ovs...)
	if lostProven && lostV != nil {
		lostV.Class = r.lostClass(lostV, overlaps, excl, lockIllegal)
		vs = append(vs, *lostV)
	} else if lostProven {
		vs = append(vs, lostUpdateViolation(unlocatedLostClass(lockIllegal || len(grants) > 0)))
	}
	var fenceV *Violation
	f.fenceRegressions, fenceV = r.fenceRegressions()
	if fenceV != nil {
		vs = append(vs, *fenceV)
	}
	for i := range r.ops {
		if w := &r.ops[i]; w.Op == history.OpWrite && w.Ok() {
			if j, ok := r.acquireOf(w); ok && expiredWrite(&r.ops[j], w) {
				f.counts.ExpiredWrites++
			}
		}
	}
	unbacked := r.unbackedGrants()
	f.counts.UnbackedGrants = len(unbacked)
	vs = append(vs, unbacked...)
	slices.SortStableFunc(vs, func(x, y Violation) int { return cmp.Compare(x.AtMs, y.AtMs) })
	r.blame(vs)
	f.vs = vs
	for _, v := range vs {
		if !slices.Contains(f.classes, v.Class) {
			f.classes = append(f.classes, v.Class)
		}
	}

	// Liveness.
	f.longestStall, f.stuck = r.liveness()

	if lockRes.Result == string(porcupine.Unknown) || resRes.Result == string(porcupine.Unknown) {
		f.timedOut = fmt.Sprintf("a linearizability check timed out after %v: the verdict is unknown, not safe (raise the timeout)", r.opts.Timeout)
	}
	out := &Outcome{Result: newResult(h, &f)}
	res := &out.Result
	if !r.opts.SkipVisualization {
		var at int64
		if res.FirstViolation != nil {
			at = int64(res.FirstViolation.AtMs * float64(time.Millisecond))
		}
		r.visualize(lockLin, &res.LockCheck, at)
		r.visualize(resLin, &res.ResourceCheck, at)
	}
	for _, lin := range []*Linearization{lockLin, resLin} {
		if lin != nil {
			lin.ops = nil // what was checked is not needed past visualize, and is most of a long run's memory
		}
	}
	out.Lock, out.Resource = lockLin, resLin
	out.Analysis = Analysis{Holds: r.holds(ws), Leases: r.leases(), Violations: vs, Danger: r.danger}
	res.CheckerMs = ms(int64(time.Since(began)))
	return out
}

// maxCauses bounds how many illegal grants get their cause searched.
const maxCauses = 64

// grantViolations makes the violations of illegal grants, the first k0 of the run's grants having
// been made before (in earlier segments): which acquires were granted illegally, and what let
// each happen.
func (r *run) grantViolations(grants []grant, k0 int) ([]Violation, map[int]bool, map[int]string) {
	var vs []Violation
	illegal := make(map[int]bool, len(grants))
	causeOf := make(map[int]string, len(grants)) // illegally granted acquire → what let it happen
	for k, g := range grants {
		illegal[g.b] = true
		a, b := &r.ops[g.a], &r.ops[g.b]
		until := "never expires"
		if g.until != history.Never {
			until = fmt.Sprintf("could not have expired before %.3fms", ms(g.until))
		}
		// Finding a cause scans the history; past the first grants (a long broken run has
		// thousands) the scans would make the check quadratic, and the report shows the first.
		cause := "cause not searched (only the first grants' are)"
		if k0+k < maxCauses {
			cause = r.serviceCause(a, b)
		}
		causeOf[g.b] = cause
		vs = append(vs, Violation{Kind: "service", Class: ServiceClass, AtMs: ms(b.Return), A: ref(a), B: ref(b),
			Explanation: fmt.Sprintf("the lock service granted acq %d to client %d by %.3fms while acq %d of client %d held a lease that %s and had not been released",
				b.ID, b.Client, ms(b.Return), a.ID, a.Client, until),
			Cause: fmt.Sprintf("client %d granted at %s while client %d's %s; %s", b.Client, history.FormatNs(b.Return), a.Client, leaseRan(g.until), cause)})
	}
	return vs, illegal, causeOf
}

// overlapViolations makes the violations of the overlapping holders, each with its class.
func (r *run) overlapViolations(overlaps []overlap, illegal map[int]bool, causeOf map[int]string, unlocated bool) ([]Violation, []Class) {
	var vs []Violation
	excl := r.excludedClass(overlaps, illegal, unlocated)
	for i, ov := range overlaps {
		a, b := &r.ops[ov.a], &r.ops[ov.b]
		v := Violation{Kind: "exclusion", Class: excl[i], AtMs: ms(ov.at), A: ref(a), B: ref(b)}
		late := ""
		if ov.aEnd >= 0 {
			e := &r.ops[ov.aEnd]
			late = fmt.Sprintf(" (its %s %d was invoked at %.3fms)", e.Op, e.ID, ms(e.Call))
		}
		if excl[i] == ServiceClass {
			v.Explanation = fmt.Sprintf("client %d (acq %d) started holding at %.3fms while client %d (acq %d) was still using the resource%s; the lock service's grants were illegal",
				b.Client, b.ID, ms(ov.at), a.Client, a.ID, late)
			v.Cause = causeOf[ov.b]
			if v.Cause == "" {
				v.Cause = causeOf[ov.a]
			}
		} else {
			v.Explanation = fmt.Sprintf("client %d (acq %d) started holding at %.3fms while client %d (acq %d) was still using the resource%s after its lease could have expired: the grant was legal, the old holder used an expired lease",
				b.Client, b.ID, ms(ov.at), a.Client, a.ID, late)
			v.Cause = r.clientCause(a, ov.aEnd)
		}
		vs = append(vs, v)
	}
	return vs, excl
}

// excludedClass classifies each overlap. It is the client's fault when the old holder's late
// access was a write after its own validity ended. Otherwise it is the service's fault when
// either acquisition of the pair was granted illegally, or when porcupine proved an illegal grant that could not be pinned on
// any acquisition (unlocated); otherwise the grants were legal and the old holder used an expired
// lease.
func (r *run) excludedClass(overlaps []overlap, illegal map[int]bool, unlocated bool) []Class {
	out := make([]Class, len(overlaps))
	for i, ov := range overlaps {
		switch {
		case ov.aEnd >= 0 && expiredWrite(&r.ops[ov.a], &r.ops[ov.aEnd]):
			// The old holder wrote after its own validity ended: whatever the grants, it
			// used a lease it could know was over.
			out[i] = ClientClass
		case illegal[ov.a] || illegal[ov.b]:
			out[i] = ServiceClass
		case unlocated:
			out[i] = ServiceClass
		default:
			out[i] = ClientClass
		}
	}
	return out
}

// lostClass gives a lost update the class of the overlap its writes belong to.
func (r *run) lostClass(v *Violation, overlaps []overlap, excl []Class, lockIllegal bool) Class {
	if c, ok := r.overlapClass(v, overlaps, excl); ok {
		return c
	}
	return unlocatedLostClass(lockIllegal)
}

// overlapClass is the class of the first overlap v's writes belong to, if one does.
func (r *run) overlapClass(v *Violation, overlaps []overlap, excl []Class) (Class, bool) {
	for i, ov := range overlaps {
		ids := []int64{r.ops[ov.a].ID, r.ops[ov.b].ID}
		if slices.Contains(ids, v.A.Acq) || slices.Contains(ids, v.B.Acq) {
			return excl[i], true
		}
	}
	return "", false
}

// unlocatedLostClass is the class of a lost update no overlap explains.
func unlocatedLostClass(serviceFault bool) Class {
	if serviceFault {
		return ServiceClass
	}
	return ClientClass
}

// lostUpdateViolation is the violation of a lost update porcupine proved without one located.
func lostUpdateViolation(c Class) Violation {
	return Violation{Kind: "lost-update", Class: c, Explanation: "porcupine found no order of atomic increments that explains the counter: an update was lost"}
}

// leaseRan says how long a held lease ran: to a time, or — a lease without TTL (a session lock) —
// until its release.
func leaseRan(until int64) string {
	if until == history.Never {
		return "lock was held until released (no TTL)"
	}
	return "lease ran to " + history.FormatNs(until)
}
