package checker

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

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
	heldNs      int64 // the union of the holding windows
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
	res.ExpiredWrites, res.HeldMs = c.ExpiredWrites, ms(f.heldNs)
	res.UnbackedGrants = c.UnbackedGrants
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
	decide(&res, f.vs, f.stuck, f.timedOut, h.Abort, h.Stop, h.StopVerdict)
	return res
}

// decide gives res its verdict and what follows from it: vs are the safety violations in time
// order, stuck the stall that makes the run stuck (nil if none), timedOut the warning of a
// porcupine check that ran out of time ("" if none), abort why the run ended before its time
// ("" if it ran its course: a run cut short proves no safety, and its stall was cut short too),
// stop why it stopped once decided ("" if it ran its full time) and stopVerdict with which
// verdict. res.Evidence is the evidence line.
func decide(res *Result, vs []Violation, stuck *Violation, timedOut, abort, stop, stopVerdict string) {
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
		res.Stopped = stop
	case stop != "" && stopVerdict != string(Safe) && (stopVerdict != string(Stuck) || stuck == nil):
		// The run stopped on a violation its whole history does not show: a defect of the
		// early stop (a prefix that was not what it seemed). It proves nothing either way.
		res.Verdict = Unknown
		what := "no violation"
		if stopVerdict == string(Stuck) {
			what = "no stall past the stuck limit"
		}
		ended = "the run stopped early (" + stop + "), but its whole history shows " + what + ": " +
			"rerun the cell with --full and report this"
		res.Warnings = append(res.Warnings, ended)
	case abort != "":
		res.Verdict = Unknown
		ended = "the run ended early: " + abort
		res.Warnings = append(res.Warnings, ended)
	case stuck != nil:
		res.Verdict = Stuck
		res.FirstViolation = stuck
		res.Evidence = EvidenceOK
		res.Stopped = stop
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
	if stopVerdict == string(Safe) {
		res.Stopped = stop // judged whole, as any run: what followed the stop could still show
	}
	res.DecidedBy = decidedBy(res, vs)
	if ended != "" {
		res.DecidedBy = ended
	}
}
