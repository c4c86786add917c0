package checker

import (
	"fmt"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// decidedBy says in one line what decided the verdict, with the numbers that did (DESIGN.md
// §10): the CLI's verdict line, the report's headline and the matrix cell's title all show it.
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
// often as it may (none unbounded or periodic) and healed (none lasting), and since the last heal
// as long has passed as a whole run's tail (the stuck limit and a TTL), and at least a lease: a
// fault's danger window has closed, and a stall it left would already show as stuck — unless a
// stall is under way.
func Decided(h *history.History, opts Options) (Verdict, string) {
	r := &CheckHistory(h, opts).Result
	switch {
	case r.Verdict == Unsafe && r.TTDMs != nil && r.FirstViolation != nil:
		return Unsafe, fmt.Sprintf("a %s violation at %s, found while the run went on", r.FirstViolation.Kind, history.FormatMs(*r.TTDMs))
	case r.Verdict == Safe:
		if why := settled(h); why != "" {
			return Safe, why
		}
	}
	return "", ""
}

// settled says why no fault of h's plan can act on the run any more and what they did is over,
// or "" while one still could.
func settled(h *history.History) string {
	run := h.Run()
	var now, healed int64
	for i := range h.Events {
		now = max(now, h.Events[i].AtNs)
	}
	fired := make([]int, len(h.Meta.Faults))
	for _, f := range run.Faults {
		if f.Rule == 0 || f.Arm || f.ActsOn == history.ActsOnHarness {
			continue // the harness's own stalls and a fault's arming attack nothing
		}
		if f.End == history.Never || f.Lasting || f.Rule > len(fired) {
			return ""
		}
		fired[f.Rule-1]++
		healed = max(healed, f.End)
	}
	for i, p := range h.Meta.Faults {
		times := p.Times
		if times == 0 {
			times = 1
		}
		if times < 0 || p.EveryNs > 0 || fired[i] < times {
			return ""
		}
	}
	// As long after the last heal as a whole run goes on after its fault phase (the harness's
	// tail: the stuck limit and a TTL), and at least a lease: the danger window's end.
	wait := max(h.Meta.TTLNs, h.Meta.SessionTimeoutNs, h.Meta.StuckAfterNs+h.Meta.TTLNs)
	if now < healed+wait {
		return ""
	}
	// A stall under way could still grow into a stuck run: a client waiting with no grant for
	// half the stuck limit (redlock × slow-release once stalled from 0.85 s after the last heal,
	// and was stuck 1 s later) keeps the run going.
	var lastGrant int64
	waiting := false
	for i := range run.Ops {
		o := &run.Ops[i]
		if o.Op != history.OpAcquire {
			continue
		}
		if o.Status == history.TypeOk {
			lastGrant = max(lastGrant, o.Return)
		}
		waiting = waiting || o.Done == history.Never
	}
	if waiting && now-max(lastGrant, healed) >= h.Meta.StuckAfterNs/2 {
		return ""
	}
	if len(h.Meta.Faults) == 0 {
		return fmt.Sprintf("no fault planned, and %s of contended grants and writes with the evidence in",
			history.FormatNs(now))
	}
	return fmt.Sprintf("every planned fault fired and healed (the last at %s), then the danger window and the stuck limit (%s) passed with the evidence in",
		history.FormatNs(healed), history.FormatNs(wait))
}
