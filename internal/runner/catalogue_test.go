package runner_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestCatalogue runs every cell of the catalogue for the seven seed algorithms against real servers
// and checks it against its expectation: every claim of the catalogue (and the README) is shown
// by a run. A cell that misses is run once more — the catalogue promises ≥ 19 of 20 reproductions,
// not 20 — and the retry is logged; a second miss fails.
func TestCatalogue(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole catalogue against real servers")
	}
	out := t.TempDir()
	if dir := os.Getenv("LOCKCHAOS_REPORTS"); dir != "" {
		out = dir
	}
	for _, s := range scenarios.All() {
		t.Run(s.Name, func(t *testing.T) {
			for _, alg := range scenarios.Seed {
				cell, err := s.Cell(alg)
				if err != nil {
					t.Fatal(err)
				}
				if cell.NA != "" {
					continue
				}
				t.Run(alg, func(t *testing.T) {
					var lastErr string
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
						if r.Matches != nil && *r.Matches {
							if attempt > 1 {
								t.Logf("matched on the second run after: %s", lastErr)
							}
							return
						}
						class := "-"
						if r.ViolationClass != nil {
							class = string(*r.ViolationClass)
						}
						lastErr = "verdict " + string(r.Verdict) + " class " + class + ", expected " + cell.Expected +
							" (report " + rc.Dir + "/report.html)"
					}
					t.Errorf("%s × %s: %s", alg, s.Name, lastErr)
				})
			}
		})
	}
}
