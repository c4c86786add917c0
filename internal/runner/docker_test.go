package runner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestDockerMatchesLocal runs cells on the docker backend (images built offline by make images)
// and checks they give the verdicts the catalogue expects, which the selftest shows on the local
// backend: the same lock, the same faults, the same verdict, whether the servers are processes or
// containers. Without Docker it skips, unless LOCKCHAOS_REQUIRE_DOCKER=1 (CI) makes it fail.
func TestDockerMatchesLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Docker and the lockchaos images")
	}
	cells := []struct{ scenario, algorithm string }{
		{"baseline", "setnx"}, {"baseline", "getset"}, {"baseline", "token"}, {"baseline", "redlock"},
		{"baseline", "zookeeper"}, {"client-pause", "token"}, {"restart", "token"}, {"zk-leader-kill", "zookeeper"},
	}
	out := t.TempDir()
	for _, tc := range cells {
		t.Run(tc.scenario+"/"+tc.algorithm, func(t *testing.T) {
			s, err := scenarios.Lookup(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			cell, err := s.Cell(tc.algorithm)
			if err != nil {
				t.Fatal(err)
			}
			var last string
			for attempt := 1; attempt <= 2; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				rc, _, err := runner.RunCell(ctx, cell, runner.Options{Out: out, Seed: int64(attempt),
					Backend: cluster.Docker, RedisImage: "lockchaos/redis", ZooKeeperImage: "lockchaos/zookeeper"}, attempt)
				cancel()
				if errors.Is(err, cluster.ErrMissingBinary) {
					testenv.Missing(t, testenv.RequireDocker, err.Error()+" (run make images)")
				}
				if err != nil {
					t.Fatalf("run on docker: %v", err)
				}
				r := rc.Result
				if r.Backend != cluster.Docker {
					t.Fatalf("result says backend %q", r.Backend)
				}
				if r.Matches != nil && *r.Matches {
					if attempt > 1 {
						t.Logf("matched on the second run after: %s", last)
					}
					return
				}
				last = "verdict " + string(r.Verdict) + ", expected " + cell.Expected
			}
			t.Errorf("%s × %s on docker: %s (local gives the expectation)", tc.algorithm, tc.scenario, last)
		})
	}
}
