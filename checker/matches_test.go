package checker

import "testing"

func TestMatchesVocabulary(t *testing.T) {
	svc := &Result{Verdict: Unsafe, ClassesSeen: []Class{ServiceClass}}
	both := &Result{Verdict: Unsafe, ClassesSeen: []Class{ClientClass, ServiceClass}}
	for _, tc := range []struct {
		r        *Result
		expected string
		want     bool
	}{
		{&Result{Verdict: Safe}, "safe", true},
		{&Result{Verdict: Safe}, "unsafe", false},
		{svc, "unsafe", true},
		{svc, "unsafe-service", true},
		{svc, "unsafe-client", false},
		{both, "unsafe-client", true},
		{&Result{Verdict: Stuck}, "stuck", true},
		{&Result{Verdict: Unknown}, "safe", false},
		// "racy" was an expectation that matched both verdicts; it is gone (docs/design.md#evidence).
		{&Result{Verdict: Safe}, "racy", false},
		{svc, "racy", false},
		{&Result{Verdict: Stuck}, "racy", false},
		{&Result{Verdict: Unknown}, "racy", false},
	} {
		if got := Matches(tc.r, tc.expected); got != tc.want {
			t.Errorf("Matches(%s %v, %q) = %v, want %v", tc.r.Verdict, tc.r.ClassesSeen, tc.expected, got, tc.want)
		}
	}
}
