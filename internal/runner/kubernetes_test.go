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

// TestKubernetesLeaderElection runs client-go's leader election against a real kube-apiserver
// (make kube-apiserver builds it) through the catalogue's cells: the baseline safe with evidence,
// the GC pause past the lease caught (no fencing), the partition safe (the elector stops leading
// after its renew deadline, and the careful leader skips its write), and the mutant that ignores
// OnStoppedLeading — kubernetes #23731's mechanism — caught there; a candidate with a shorter
// lease than the leader's (#47671) safe since #114872, and caught without it. A cell that misses runs again
// with the next seed, three runs in all (the machine is shared).
func TestKubernetesLeaderElection(t *testing.T) {
	testenv.Servers(t)
	cases := []struct{ alg, scenario, want string }{
		{"k8s-leaderelection", "baseline", "safe"},
		{"k8s-leaderelection", "client-pause", "unsafe-client"},
		{"k8s-leaderelection", "partition", "safe"},
		{"k8s-leaderelection-ignore-stopped", "partition", "unsafe-client"},
		{"k8s-leaderelection-release", "baseline", "safe"},
		// kubernetes #47671: a candidate with a shorter lease; fixed by #114872 (safe), and the
		// mutant that counts by its own duration, as client-go did before, caught.
		{"k8s-leaderelection-short-lease", "partition", "safe"},
		{"k8s-leaderelection-own-duration", "partition", "unsafe-service"},
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
			if cell.Expected != tc.want {
				t.Fatalf("the catalogue expects %q of %s × %s, this test %q", cell.Expected, tc.alg, tc.scenario, tc.want)
			}
			var misses []string
			for attempt := 1; attempt <= 3; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				rc, _, err := runner.RunCell(ctx, cell, runner.Options{Out: t.TempDir(), Seed: int64(attempt)}, 0)
				cancel()
				if errors.Is(err, cluster.ErrMissingBinary) {
					testenv.MissingServer(t, err)
				}
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				r := rc.Result
				t.Logf("seed %d: %s (%s) — %s", attempt, r.Verdict, r.Evidence, r.DecidedBy)
				miss := ""
				switch {
				case r.Matches == nil || !*r.Matches:
					miss = "does not match its expectation"
				case tc.want == "safe" && (r.Evidence != checker.EvidenceOK || r.WritesOk == 0):
					miss = "safe without evidence"
				case tc.want != "safe" && r.ExclusionViolations == 0:
					miss = "unsafe without an overlapping write"
				}
				if miss == "" {
					return
				}
				misses = append(misses, string(r.Verdict)+": "+miss+" — "+r.DecidedBy)
			}
			t.Errorf("%s × %s, want %s, missed in %d runs: %v", tc.alg, tc.scenario, tc.want, len(misses), misses)
		})
	}
}
