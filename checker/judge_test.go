package checker

import "testing"

// Matches takes every spelling ParseExpectation takes (codes, long names, "unsafe (client)"),
// and "unknown"; "unsafe-lost" needs an update proven lost; a class is found among ClassesSeen or
// as the first violation's (a result.json from before classes_seen); nil never matches.
func TestMatchesSpellings(t *testing.T) {
	svc := ServiceClass
	lost := &Result{Verdict: Unsafe, ClassesSeen: []Class{ClientClass}, LostUpdates: 2}
	kept := &Result{Verdict: Unsafe, ClassesSeen: []Class{ClientClass}}
	old := &Result{Verdict: Unsafe, ViolationClass: &svc}
	first := &Result{Verdict: Unsafe, FirstViolation: &Violation{Class: ServiceClass}}
	for _, tc := range []struct {
		r        *Result
		expected string
		want     bool
	}{
		{&Result{Verdict: Safe}, "S", true},
		{lost, "Ul", true}, {lost, "unsafe-lost", true}, {lost, "Unsafe (lost)", true}, {kept, "unsafe-lost", false},
		{lost, "U", true}, {lost, "Uc", true}, {lost, "Us", false},
		{old, "Us", true}, {old, "unsafe-client", false}, {first, "unsafe_service", true},
		{&Result{Verdict: Stuck}, "X", true},
		{&Result{Verdict: Unknown}, "unknown", true}, {&Result{Verdict: Unknown}, "Unknown", true},
		{&Result{Verdict: Safe}, "-", false}, {&Result{Verdict: Safe}, "", false},
		{nil, "safe", false}, {nil, "unknown", false},
	} {
		if got := Matches(tc.r, tc.expected); got != tc.want {
			t.Errorf("Matches(%+v, %q) = %v, want %v", tc.r, tc.expected, got, tc.want)
		}
	}
	for _, code := range ExpectationCodes() {
		if _, ok := ParseExpected(code); !ok {
			t.Errorf("ParseExpected refuses the catalogue's code %s", code)
		}
	}
	for _, name := range ExpectedNames() {
		if long, ok := ParseExpected(name); !ok || long != name {
			t.Errorf("ParseExpected(%q) = %q, %v", name, long, ok)
		}
	}
}
