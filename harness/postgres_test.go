package harness_test

import (
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/harness"
)

// TestPostgresCells runs the PostgreSQL locks' baseline and flagship cells against real servers,
// one at a time: each lock is safe alone; a session advisory lock through pgbouncer's
// transaction pool is not (and the transaction-level one is); the session-kill fault catches the
// holder that trusts its session lock without asking the server, where the careful one writes
// nothing after it lost the lock.
func TestPostgresCells(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	runSQLCells(t, []sqlCell{
		{name: "baseline/pg-advisory", alg: "pg-advisory", want: checker.Safe},
		{name: "baseline/pg-advisory-xact", alg: "pg-advisory-xact", want: checker.Safe},
		{name: "baseline/pg-lease", alg: "pg-lease", fencing: true, want: checker.Safe},
		{name: "pgbouncer/pg-advisory", alg: "pg-advisory", topology: "postgres-pgbouncer", want: checker.Unsafe,
			check: func(t *testing.T, r *checker.Result) {
				if r.ServiceViolations == 0 || r.LostUpdates == 0 {
					t.Errorf("%d illegal grants, %d lost updates: want both > 0 (two clients in one pooled session)",
						r.ServiceViolations, r.LostUpdates)
				}
			}},
		{name: "pgbouncer/pg-advisory-xact", alg: "pg-advisory-xact", topology: "postgres-pgbouncer", want: checker.Safe},
		{name: "session-kill/pg-advisory", alg: "pg-advisory", faults: kill, want: checker.Unsafe, check: askedAndDidNotWrite},
		// The holder that does not ask reads, holds and writes; the next holder must read before
		// that write for it to be lost. With a 10 ms hold a loaded make test once had the waiter
		// read after it (unsafe, 1 illegal grant, 0 lost updates): 100 ms gives the grant room.
		{name: "session-kill/pg-advisory-no-valid", alg: "pg-advisory-no-valid", faults: kill, hold: 100 * time.Millisecond,
			want: checker.Unsafe, check: wroteIntoTheNextLock},
	})
}

// kill ends the second holder's session right after it acquired (the session-kill scenario's
// fault, at the second grant as mysql-get-lock's variant has it): by then every waiter is queued
// in the server. At the first grant the cell came out safe once in a loaded make test (its
// history was not kept; 8 of 8 runs beside two CPU-bound loops were unsafe after), as 1 selftest
// run of mysql-get-lock under load was (expect_mariadb.go): likely a kill that freed the lock
// before any waiter was queued, so the holder's release came before the next grant.
var kill = []faults.Spec{{Kind: "session-kill", Point: "cs:acquired", Skip: 1}}

// askedAndDidNotWrite: the kill fired, the server granted the waiter while the lock model saw the
// holder hold (a service violation), and the careful holder asked the server and lost no update.
func askedAndDidNotWrite(t *testing.T, r *checker.Result) {
	if len(r.FaultsFired) == 0 {
		t.Errorf("session-kill did not fire")
	}
	if r.ViolationClass == nil || *r.ViolationClass != checker.ServiceClass || r.LostUpdates != 0 {
		t.Errorf("class %v, %d lost updates: want the service's grant and no lost update (the holder asked and did not write)",
			r.ViolationClass, r.LostUpdates)
	}
}

// wroteIntoTheNextLock: the holder that does not ask wrote while the next client held.
func wroteIntoTheNextLock(t *testing.T, r *checker.Result) {
	if r.LostUpdates == 0 {
		t.Errorf("no lost update: the holder that does not ask should have written into the next holder's lock")
	}
}

// sqlCell is one run of a SQL lock's cell and what it must give.
type sqlCell struct {
	name, alg, topology string
	faults              []faults.Spec
	fencing             bool
	hold                time.Duration // the workload's hold, if not the standard 10 ms
	want                checker.Verdict
	check               func(t *testing.T, r *checker.Result)
}

// runSQLCells runs each cell once (seed 1, 2 s, 5 clients, TTL 500 ms), one at a time. A safe
// cell needs evidence ok and dozens of acquires.
func runSQLCells(t *testing.T, cells []sqlCell) {
	std := harness.Workload{Clients: 5, TTL: 500 * time.Millisecond, Hold: 10 * time.Millisecond}
	for _, tc := range cells {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, harness.Config{Algorithm: tc.alg, Scenario: tc.name, Topology: tc.topology, Seed: 1,
				Duration: 2 * time.Second, StuckAfter: 1500 * time.Millisecond, Faults: tc.faults,
				Workload: func() harness.Workload {
					w := std
					w.Fencing = tc.fencing
					if tc.hold > 0 {
						w.Hold = tc.hold
					}
					return w
				}()})
			t.Logf("%s: %s, %d acquires, %d illegal grants, %d lost updates, evidence %s", tc.name, r.Verdict,
				r.AcquiresOk, r.ServiceViolations, r.LostUpdates, r.Evidence)
			if r.Verdict != tc.want {
				t.Errorf("verdict %s, want %s (first violation %+v)", r.Verdict, tc.want, r.FirstViolation)
			}
			if tc.want == checker.Safe && (r.Evidence != "ok" || r.AcquiresOk < 20) {
				t.Errorf("safe with evidence %q and %d acquires: want ok and dozens", r.Evidence, r.AcquiresOk)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}
