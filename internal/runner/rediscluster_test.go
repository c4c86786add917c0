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

// TestRedisClusterCells runs the flagship cells of redis-cluster against real servers: token is
// safe with evidence on a healthy cluster and unsafe (service class) when the slot's master dies
// before it replicated the key; token+wait uses no unacknowledged key, so the same failover is
// safe with evidence, while the mutant that ignores WAIT's answer is caught.
func TestRedisClusterCells(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real servers")
	}
	cases := []struct {
		alg, scenario string
		want          checker.Verdict
	}{
		{"token", "baseline", checker.Safe},
		{"token", "failover", checker.Unsafe},
		{"token+wait", "failover", checker.Safe},
		{"token+wait-ignore", "failover", checker.Unsafe},
	}
	for _, tc := range cases {
		t.Run(tc.alg+"×"+tc.scenario, func(t *testing.T) {
			cell := expectedCellOn(t, tc.alg, tc.scenario, cluster.RedisCluster)
			r := runExpected(t, cell, runner.Options{Out: t.TempDir(), Seed: 1}, tc.want)
			if tc.want == checker.Safe && r.Evidence != "ok" {
				t.Errorf("evidence %q: a safe verdict must show the run could have failed", r.Evidence)
			}
			if tc.want == checker.Safe && r.WritesInWindow < 1 && tc.scenario != "baseline" {
				t.Errorf("writes_in_window %d: nothing was written while the fault put the lock at risk", r.WritesInWindow)
			}
			if tc.want == checker.Unsafe && (r.ViolationClass == nil || *r.ViolationClass != checker.ServiceClass) {
				t.Errorf("violation class %v, want service: the promoted replica granted a lock still validly held", r.ViolationClass)
			}
		})
	}
}

// expectedCellOn is scenario's cell for alg on topology, which must have an expectation.
func expectedCellOn(t *testing.T, alg, scenario, topology string) scenarios.Cell {
	t.Helper()
	s, err := scenarios.Lookup(scenario)
	if err != nil {
		t.Fatal(err)
	}
	cell, err := s.CellOn(alg, topology)
	if err != nil {
		t.Fatal(err)
	}
	if cell.Expected == "" {
		t.Fatalf("%s × %s on %s has no expectation", alg, scenario, topology)
	}
	return cell
}

// runExpected runs cell (at most 2 minutes), which must give want and match its expectation; a
// missing server fails under LOCKCHAOS_REQUIRE_SERVERS.
func runExpected(t *testing.T, cell scenarios.Cell, o runner.Options, want checker.Verdict) *checker.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, _, err := runner.RunCell(ctx, cell, o, 0)
	if errors.Is(err, cluster.ErrMissingBinary) {
		testenv.MissingServer(t, err)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r := rc.Result
	t.Logf("%s: %s: %s", rc.Dir, r.Verdict, r.DecidedBy)
	if r.Verdict != want {
		t.Fatalf("verdict %s, want %s (%s)", r.Verdict, want, r.DecidedBy)
	}
	if r.Matches == nil || !*r.Matches {
		t.Errorf("the run does not match the catalogue's %s", cell.Expected)
	}
	return r
}
