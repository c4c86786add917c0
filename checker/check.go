package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// CheckHistory runs every check on h and returns the result.json object with porcupine's linearization
// info for the visualization. It never fails: what it cannot decide makes the verdict unknown.
//
// Verdict: unsafe if any exclusion violation, illegal grant, fence regression or proven lost
// update; else stuck if clients waited StuckAfter with no grant after all faults healed; else
// unknown if a porcupine check ran out of time, no acquire succeeded, or the run has no evidence
// that it could have failed (DESIGN.md §10: a planned fault that never fired, no write, no write
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
	slices.SortStableFunc(vs, func(x, y Violation) int { return cmp.Compare(x.AtMs, y.AtMs) })
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

// facts are what the checks found in a history, read whole (CheckRun) or in segments (the
// merger): everything its Result is made of.
type facts struct {
	// r is the run the evidence is found in: the whole history, or for segments its faults
	// alone (their counts are in counts, and granted holds the clients granted in them).
	r       *run
	granted map[int]bool
	// counts holds the acquires, the stale writes rejected and the expired writes; for segments
	// also the writes and grants, in the danger windows and in all.
	counts Result
	// lat are the successful acquires' latencies, writes the successful writes, ops the
	// operations.
	lat         []int64
	writes, ops int
	warnings    []string // besides the history's own

	lockCheck, resourceCheck Check
	overlaps, grants         int // overlapping holders, illegal grants located
	lostUpdates              int
	fenceRegressions         int
	longestStall             time.Duration
	// vs are the safety violations in time order, classes every class among them in order of
	// first appearance, stuck the stall that makes the run stuck (nil if none), timedOut the
	// warning of a porcupine check that ran out of time ("" if none).
	vs       []Violation
	classes  []Class
	stuck    *Violation
	timedOut string
}

// newResult is the one constructor of a Result: what ran and what was expected, from h's meta
// line; the numbers, the evidence and the verdict, from what the checks found in it.
func newResult(h *history.Run, f *facts) Result {
	res := Result{Algorithm: h.Meta.Algorithm, Scenario: h.Meta.Scenario, Backend: h.Meta.Backend, Seed: h.Meta.Seed}
	if h.Meta.Expected != "" {
		e := h.Meta.Expected
		res.Expected = &e
	}
	res.Warnings = append(append(res.Warnings, h.Warnings...), f.warnings...)
	for _, fs := range h.Faults {
		if fs.Error != "" {
			res.FaultErrors = append(res.FaultErrors, fmt.Sprintf("fault %d %s on %s: %s", fs.ID, fs.Name, fs.Target, fs.Error))
		}
	}
	c := &f.counts
	res.AcquiresOk, res.AcquiresFailed, res.StaleWritesRejected = c.AcquiresOk, c.AcquiresFailed, c.StaleWritesRejected
	res.ExpiredWrites = c.ExpiredWrites
	finishCounts(&res, f.lat, f.writes, f.ops, h.End)
	res.LockCheck, res.ResourceCheck = f.lockCheck, f.resourceCheck
	res.ExclusionViolations, res.ServiceViolations = f.overlaps, f.grants
	if res.ServiceViolations == 0 && f.lockCheck.Result == string(porcupine.Illegal) {
		res.ServiceViolations = 1 // porcupine proved an illegal grant it could not pin on one
	}
	res.LostUpdates = f.lostUpdates
	res.FenceRegressions = f.fenceRegressions
	res.LongestStallMs = ms(int64(f.longestStall))
	res.ClassesSeen = f.classes

	// Evidence: could this run have failed?
	res.WritesOk, res.WritesRejected = c.WritesOk, c.WritesRejected
	res.WritesInWindow, res.GrantsInWindow = c.WritesInWindow, c.GrantsInWindow
	res.Evidence = f.r.evidence(&res, h.Unfired, f.granted)
	decide(&res, f.vs, f.stuck, f.timedOut, h.Abort)
	return res
}

// decide gives res its verdict and what follows from it: vs are the safety violations in time
// order, stuck the stall that makes the run stuck (nil if none), timedOut the warning of a
// porcupine check that ran out of time ("" if none), abort why the run ended before its time
// ("" if it ran its course: a run cut short proves no safety, and its stall was cut short too).
// res.Evidence is the evidence line.
func decide(res *Result, vs []Violation, stuck *Violation, timedOut, abort string) {
	evidence := res.Evidence
	ended := ""
	switch {
	case len(vs) > 0:
		res.Verdict = Unsafe
		first := vs[0]
		res.FirstViolation = &first
		c := first.Class
		res.ViolationClass = &c
		res.Evidence = EvidenceOK // the violation is its own evidence
	case abort != "":
		res.Verdict = Unknown
		ended = "the run ended early: " + abort
		res.Warnings = append(res.Warnings, ended)
	case stuck != nil:
		res.Verdict = Stuck
		res.FirstViolation = stuck
		res.Evidence = EvidenceOK
	case timedOut != "":
		res.Verdict = Unknown
		res.Warnings = append(res.Warnings, timedOut)
	case res.AcquiresOk == 0:
		res.Verdict = Unknown
		res.Warnings = append(res.Warnings, "no acquire succeeded: too few operations to judge")
		if res.Evidence == EvidenceOK {
			res.Evidence = "no acquire succeeded"
		}
	case evidence != EvidenceOK:
		res.Verdict = Unknown
		res.Warnings = append(res.Warnings, "no evidence the run could have failed: "+evidence)
	default:
		res.Verdict = Safe
	}
	if res.FirstViolation != nil {
		t := res.FirstViolation.AtMs
		res.TTDMs = &t
	}
	if res.Expected != nil {
		m := Matches(res, *res.Expected)
		res.Matches = &m
	}
	res.DecidedBy = decidedBy(res, vs)
	if ended != "" {
		res.DecidedBy = ended
	}
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
			Cause: fmt.Sprintf("client %d granted at %s while client %d's lease ran to %s; %s", b.Client, fmtMs(b.Return), a.Client, fmtMs(g.until), cause)})
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

// Matches is the one judge of whether a result meets an expectation: run, check, the matrix,
// merge, the selftest, reproduce, locktest, the reports and junit.xml all ask it. expected is
// any spelling ParseExpected takes: "safe", "unsafe", "stuck", "unknown", "unsafe-service" /
// "unsafe-client", which also need a violation of that class (among ClassesSeen, or the first
// violation's, which a result from before classes_seen only has), or "unsafe-lost", which needs
// an update proven lost. A nil result, or an expectation it does not take, never matches.
func Matches(res *Result, expected string) bool {
	long, ok := ParseExpected(expected)
	if res == nil || !ok {
		return false
	}
	verdict, class, _ := strings.Cut(long, "-")
	if Verdict(verdict) != res.Verdict {
		return false
	}
	switch class {
	case "":
		return true
	case "lost":
		return res.LostUpdates > 0
	}
	c := Class(class)
	return slices.Contains(res.ClassesSeen, c) || (res.ViolationClass != nil && *res.ViolationClass == c) ||
		(res.FirstViolation != nil && res.FirstViolation.Class == c)
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
