package runner_test

import (
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// TestPostgresStandbyCells runs pg-advisory's cells on postgres-standby against real servers: safe
// with evidence on a healthy primary; under failover (replication cut, the primary fenced, the
// standby promoted) the promoted standby, which never holds an advisory lock, grants the waiter
// while the holder still holds — unsafe, service class — and the careful holder, whose Valid asks
// the server, finds its session gone and writes nothing; the mutant that does not ask loses an
// update.
func TestPostgresStandbyCells(t *testing.T) {
	testenv.Servers(t)
	cases := []struct {
		alg, scenario string
		want          checker.Verdict
		lost          bool // lost updates expected
	}{
		{"pg-advisory", "baseline", checker.Safe, false},
		{"pg-advisory", "failover", checker.Unsafe, false},
		{"pg-advisory-no-valid", "failover", checker.Unsafe, true},
	}
	for _, tc := range cases {
		t.Run(tc.alg+"×"+tc.scenario, func(t *testing.T) {
			cell := expectedCellOn(t, tc.alg, tc.scenario, cluster.PostgresStandby)
			// Full: the run goes on after the first illegal grant, so the holder reaches its write.
			r := runExpected(t, cell, runner.Options{Out: t.TempDir(), Seed: 1, Full: true}, tc.want)
			if tc.want == checker.Safe && (r.Evidence != "ok" || r.AcquiresOk < 20) {
				t.Errorf("safe with evidence %q and %d acquires: want ok and dozens", r.Evidence, r.AcquiresOk)
			}
			if tc.want == checker.Unsafe {
				if len(r.FaultsFired) == 0 {
					t.Errorf("failover did not fire")
				}
				if r.ViolationClass == nil || *r.ViolationClass != checker.ServiceClass {
					t.Errorf("violation class %v, want service: the promoted standby granted a lock still held", r.ViolationClass)
				}
				if tc.lost != (r.LostUpdates > 0) {
					t.Errorf("%d lost updates, want lost updates %v", r.LostUpdates, tc.lost)
				}
			}
		})
	}
}
