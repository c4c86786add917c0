package checker

import (
	"slices"
	"strings"
)

// The expectation vocabulary (docs/design.md#catalogue-and-expectations), defined once: the catalogue's codes and the long
// names results, the CLI's --expect and the reports use. Each long name is what Matches takes.
var expectationCodes = []struct{ code, long string }{
	{"S", "safe"},
	{"Us", "unsafe-service"},
	{"Uc", "unsafe-client"},
	{"U", "unsafe"},
	{"Ul", "unsafe-lost"}, // unsafe, with an update proven lost: what fencing must prevent
	{"X", "stuck"},
}

// ExpectationCodes lists the catalogue's codes, for messages.
func ExpectationCodes() []string {
	out := make([]string, len(expectationCodes))
	for i, c := range expectationCodes {
		out[i] = c.code
	}
	return out
}

// ParseExpectation maps a code (S, Us, Uc, U, Ul, X) or a long name (safe, unsafe-service, ...;
// case and "_" or " " for "-" do not matter) to the long name Matches takes. ok is false for
// anything else, "-" (not applicable) included.
func ParseExpectation(s string) (long string, ok bool) {
	t := strings.TrimSpace(s)
	for _, c := range expectationCodes {
		if t == c.code {
			return c.long, true
		}
	}
	k := strings.NewReplacer(":", "-", "_", "-", " ", "-", "(", "", ")", "").Replace(strings.ToLower(t))
	for _, c := range expectationCodes {
		if k == c.long {
			return c.long, true
		}
	}
	switch k {
	case "service":
		return "unsafe-service", true
	case "client":
		return "unsafe-client", true
	}
	return "", false
}

// ParseExpected is ParseExpectation, and also takes "unknown" (any case, or "?"): what one run
// may be expected to give (run --expect unknown), which no catalogue cell is (docs/design.md#evidence: a
// cell that may not decide is no expectation). It is what Matches takes.
func ParseExpected(s string) (long string, ok bool) {
	if long, ok := ParseExpectation(s); ok {
		return long, true
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case string(Unknown), "?":
		return string(Unknown), true
	}
	return "", false
}

// ExpectedNames lists the long names ParseExpected gives, for messages.
func ExpectedNames() []string {
	var out []string
	for _, c := range expectationCodes {
		out = append(out, c.long)
	}
	return append(out, string(Unknown))
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
