package runner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestFencingEndToEnd shows fencing's promise (docs/design.md#checks) against real servers: where a
// paused or cut-off holder writes late, the resource rejects its stale fence and no update is
// lost, even though exclusion broke. And where the service hands out a fence that does not go
// forward (token+fence × failover: the promoted replica's counter is behind), the checker counts
// the regression.
func TestFencingEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real servers")
	}
	cases := []struct {
		alg, scenario string
		// stale: the late write must be rejected by its fence. token+fence × partition has no
		// late write: its careful holder writes within its validity (10 ms of 500 ms) and stops.
		stale       bool
		regressions bool
	}{
		{"token+fence", "client-pause", true, false},
		{"zookeeper+fence", "client-pause", true, false},
		{"token+fence", "partition", false, false},
		{"zookeeper+fence", "partition", true, false},
		{"token+fence", "failover", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.alg+"×"+tc.scenario, func(t *testing.T) {
			s, err := scenarios.Lookup(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			cell, err := s.Cell(tc.alg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// A fence regression comes after the illegal grant the run would stop at: the whole
			// run shows it (--full).
			rc, _, err := runner.RunCell(ctx, cell, runner.Options{Out: t.TempDir(), Seed: 1, Full: tc.regressions}, 0)
			if errors.Is(err, cluster.ErrMissingBinary) {
				testenv.MissingServer(t, err)
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			r := rc.Result
			t.Logf("%s: %s", rc.Dir, r.DecidedBy)
			if r.Verdict == checker.Unknown {
				t.Fatalf("verdict unknown (%s): the run proves nothing", r.DecidedBy)
			}
			if tc.regressions {
				if r.FenceRegressions == 0 {
					t.Errorf("fence_regressions 0: the promoted replica's fences should go backwards or repeat")
				}
				return
			}
			if r.LostUpdates != 0 {
				t.Errorf("lost_updates %d, want 0: fencing must keep every update", r.LostUpdates)
			}
			if tc.stale && r.StaleWritesRejected < 1 {
				t.Errorf("stale_writes_rejected %d, want ≥ 1: the late write should reach the resource and be refused", r.StaleWritesRejected)
			}
			if r.WritesInWindow < 1 {
				t.Errorf("writes_in_window %d: nothing was written while the fault put the lock at risk", r.WritesInWindow)
			}
		})
	}
}
