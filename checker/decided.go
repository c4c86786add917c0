package checker

import (
	"fmt"
	"strings"
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
