package runner_test

import (
	"testing"

	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestFenceUncheckedConfig: the fence-unchecked mutant runs with the resource's fence check off,
// its real algorithm with it on, in the same scenario.
func TestFenceUncheckedConfig(t *testing.T) {
	s, err := scenarios.Lookup("client-pause")
	if err != nil {
		t.Fatal(err)
	}
	for alg, want := range map[string]bool{"token+fence": true, "fence-unchecked": false} {
		cell, err := s.Cell(alg)
		if err != nil {
			t.Fatal(err)
		}
		if got := runner.Config(cell, runner.Options{}, 0).Fencing; got != want {
			t.Errorf("%s: Fencing %v, want %v", alg, got, want)
		}
	}
}
