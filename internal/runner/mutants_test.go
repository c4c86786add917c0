package runner_test

import (
	"context"
	"errors"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestMutantsCaught runs every mutant against every scenario that names it (Scenario.Catches)
// on real servers and checks that it is caught with its verdict (DESIGN.md §11). As
// TestCatalogue, a miss is run once more with the next seed and a second miss fails.
// fence-unchecked must also lose updates: its real algorithm, token+fence, is unsafe (client
// class) in client-pause too, with none lost.
func TestMutantsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every mutant against real servers")
	}
	out := t.TempDir()
	for _, s := range scenarios.All() {
		mutants := make([]string, 0, len(s.Catches))
		for m := range s.Catches {
			mutants = append(mutants, m)
		}
		sort.Strings(mutants)
		for _, m := range mutants {
			if f := os.Getenv("LOCKCHAOS_MUTANT"); f != "" && f != m {
				continue
			}
			t.Run(s.Name+"/"+m, func(t *testing.T) {
				cell, err := s.Cell(m)
				if err != nil {
					t.Fatal(err)
				}
				var miss string
				for attempt := 1; attempt <= 2; attempt++ {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					rc, _, err := runner.RunCell(ctx, cell, runner.Options{Out: out, Seed: int64(attempt)}, attempt)
					cancel()
					if errors.Is(err, cluster.ErrMissingBinary) {
						testenv.MissingServer(t, err)
					}
					if err != nil {
						t.Fatalf("run: %v", err)
					}
					r := rc.Result
					caught := r.Matches != nil && *r.Matches
					if m == "fence-unchecked" {
						caught = caught && r.LostUpdates > 0
					}
					if caught {
						if attempt > 1 {
							t.Logf("caught on the second run after: %s", miss)
						}
						return
					}
					miss = "verdict " + string(r.Verdict) + ", expected " + cell.Expected + " (report " + rc.Dir + "/report.html)"
				}
				t.Errorf("%s not caught by %s: %s", m, s.Name, miss)
			})
		}
	}
}

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
