package checker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// decidedBy says in one line what decided the verdict, with the numbers that did
// (docs/design.md#evidence): the CLI's verdict line, the report's headline and the matrix cell's title all show it.
func decidedBy(res *Result, vs []Violation) string {
	switch res.Verdict {
	case Unsafe:
		first := vs[0]
		var b strings.Builder
		switch first.Kind {
		case "service":
			fmt.Fprintf(&b, "%s (%s)", plural(res.ServiceViolations, "illegal grant"), orText(first.Cause, first.Explanation))
		case "exclusion":
			fmt.Fprintf(&b, "%s (%s)", plural(res.ExclusionViolations, "overlapping holder"), orText(first.Cause, first.Explanation))
		case "fence-regression":
			fmt.Fprintf(&b, "%s (%s)", plural(res.FenceRegressions, "fence regression"), first.Explanation)
		case "unbacked-grant":
			fmt.Fprintf(&b, "%s (%s)", plural(res.UnbackedGrants, "unbacked grant"), first.Cause)
		default:
			fmt.Fprintf(&b, "%s: %s", first.Kind, first.Explanation)
		}
		if first.Kind != "service" && res.ServiceViolations > 0 {
			fmt.Fprintf(&b, ", %s", plural(res.ServiceViolations, "illegal grant"))
		}
		if first.Kind != "exclusion" {
			fmt.Fprintf(&b, ", %s", plural(res.ExclusionViolations, "overlapping holder"))
		}
		fmt.Fprintf(&b, ", %s", plural(res.LostUpdates, "lost update"))
		return b.String()
	case Stuck:
		return res.FirstViolation.Explanation
	case Unknown:
		if res.Evidence != EvidenceOK && res.Evidence != "" {
			return "no evidence: " + res.Evidence
		}
		if len(res.Warnings) > 0 {
			return res.Warnings[len(res.Warnings)-1]
		}
		return "the checker could not decide"
	}
	if len(res.DangerWindows) == 0 {
		return fmt.Sprintf("%s, %s, no fault; evidence ok", plural(res.WritesOk, "write"), plural(res.AcquiresOk, "grant"))
	}
	return fmt.Sprintf("%s, %d in the danger window, %s there; %s, evidence ok",
		plural(res.WritesOk, "write"), res.WritesInWindow, plural(res.GrantsInWindow, "contended grant"),
		plural(len(res.FaultsFired), "fault fired"))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, " fired") {
		return fmt.Sprintf("%d %ss fired", n, strings.TrimSuffix(what, " fired"))
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func orText(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Decided tells whether the verdict of a run still going on can no longer change, from its
// history so far: the harness asks while the fault phase goes on (harness.Config.Decide), and
// the run stops early with a stop line saying why. It returns the verdict and why, or "" and "".
//
// Unsafe once the history so far has a violation: operations still under way count as unknown
// outcomes, and a violation of a prefix is one of the whole history (linearizability and the
// direct checks are prefix-closed; TestPropertyPrefixUnsafeOnlyIfWholeIs).
//
// Safe once the history so far is safe with its evidence in, every planned fault has fired as
// often as it may (none unbounded or periodic) and is over, and since the last heal as long has
// passed as a whole run's tail (the stuck limit and a TTL), and at least a lease: a fault's danger
// window has closed, and a stall it left would already show as stuck — unless a stall is under
// way.
//
// Stuck once the history so far is stuck (clients waited the stuck limit with no grant after the
// last heal and a TTL) and every planned fault has fired as often as it may and is over: the
// stall began after the danger window a safe run waits out, with nothing left to act on the run.
//
// A lasting fault (a crash, a node killed for good) is over at its instant, as the liveness check
// takes it: the run is meant to go on without what it took.
func Decided(h *history.History, opts Options) (Verdict, string) {
	r := &CheckHistory(h, opts).Result
	switch {
	case r.Verdict == Unsafe && r.TTDMs != nil && r.FirstViolation != nil:
		article := "a"
		if strings.ContainsRune("aeiou", rune(r.FirstViolation.Kind[0])) {
			article = "an"
		}
		return Unsafe, fmt.Sprintf("%s %s violation at %s, found while the run went on", article, r.FirstViolation.Kind, history.FormatMs(*r.TTDMs))
	case r.Verdict == Safe:
		if why := settled(h); why != "" {
			return Safe, why
		}
	case r.Verdict == Stuck && r.TTDMs != nil:
		if _, over := faultsOver(h, h.Run()); over {
			return Stuck, fmt.Sprintf("stuck at %s, after every planned fault fired and was over", history.FormatMs(*r.TTDMs))
		}
	}
	return "", ""
}

// faultsOver says whether every fault of h's plan (run is h's) has fired as often as it may and is over (a
// lasting one at its instant), and when the last one ended.
func faultsOver(h *history.History, run *history.Run) (healed int64, over bool) {
	fired := make([]int, len(h.Meta.Faults))
	for _, f := range run.Faults {
		if f.Rule == 0 || f.Arm || f.ActsOn == history.ActsOnHarness {
			continue // the harness's own stalls and a fault's arming attack nothing
		}
		end := f.End
		if f.Lasting {
			// What it took stays taken; the run goes on without it from its instant, as the
			// liveness check judges it.
			end = f.Start
		}
		if end == history.Never || f.Rule > len(fired) {
			return 0, false
		}
		fired[f.Rule-1]++
		healed = max(healed, end)
	}
	for i, p := range h.Meta.Faults {
		times := p.Times
		if times == 0 {
			times = 1
		}
		if times < 0 || p.EveryNs > 0 || fired[i] < times {
			return 0, false
		}
	}
	return healed, true
}

// settled says why no fault of h's plan can act on the run any more, what they did is over and
// its danger window has passed, or "" while one still could.
func settled(h *history.History) string {
	run := h.Run()
	healed, over := faultsOver(h, run)
	if !over {
		return ""
	}
	var now int64
	for i := range h.Events {
		now = max(now, h.Events[i].AtNs)
	}
	// As long after the last heal as a whole run goes on after its fault phase (the harness's
	// tail: the stuck limit and a TTL), and at least a lease: the danger window's end.
	wait := max(h.Meta.TTLNs, h.Meta.SessionTimeoutNs, h.Meta.StuckAfterNs+h.Meta.TTLNs)
	if now < healed+wait {
		return ""
	}
	// A stall under way could still grow into a stuck run: clients wanting the lock with no grant
	// for half the stuck limit (redlock × slow-release once stalled from 0.85 s after the last
	// heal, and was stuck 1 s later) keep the run going. Wanting, as the liveness check counts a
	// stall: an acquire invoked since the last grant, whether or not one is in flight right now —
	// a client whose every attempt fails at once (a killed server refuses connections) is
	// between attempts most of the time.
	var lastGrant int64
	for i := range run.Ops {
		if o := &run.Ops[i]; o.Op == history.OpAcquire && o.Status == history.TypeOk {
			lastGrant = max(lastGrant, o.Return)
		}
	}
	wanting := slices.ContainsFunc(run.Ops, func(o history.Operation) bool {
		return o.Op == history.OpAcquire && (o.Done == history.Never || o.Call > lastGrant)
	})
	if wanting && now-max(lastGrant, healed) >= h.Meta.StuckAfterNs/2 {
		return ""
	}
	if len(h.Meta.Faults) == 0 {
		return fmt.Sprintf("no fault planned, and %s of contended grants and writes with the evidence in",
			history.FormatNs(now))
	}
	return fmt.Sprintf("every planned fault fired and was over (the last at %s), then the danger window and the stuck limit (%s) passed with the evidence in",
		history.FormatNs(healed), history.FormatNs(wait))
}
