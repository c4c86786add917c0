package checker

import "strings"

// The expectation vocabulary (DESIGN.md §7), defined once: the catalogue's codes and the long
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
// may be expected to give (run --expect unknown), which no catalogue cell is (DESIGN.md §10: a
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
