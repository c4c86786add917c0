package scenarios

import "github.com/lockchaos/lockchaos/faults"

// The PostgreSQL locks on postgres-standby (`--topology postgres-standby`): a primary and one
// hot standby streaming asynchronously through a proxied replication link; every client lists
// both nodes (target_session_attrs=read-write) and uses the one that takes writes. The failover
// fault cuts replication from the start, and at the first holder's cs:acquired fences the primary
// (SIGKILL, as a dead host or Patroni's watchdog) and promotes the standby (pg_promote): the
// clients reconnect to it 40–350 ms later.
//
// A session advisory lock lives in the primary's memory and is never replicated, so the promoted
// standby holds none: the first waiter to reconnect is granted while the holder still holds (the
// lock model, with no TTL, sees its lock held until it releases). The holder's session died with
// the primary: the careful client's Valid asks the server, fails, and it does not write (0 lost
// updates); the mutant that does not ask writes into the next holder's lock. pg-lease's row was
// committed on the primary only (replication cut), so the promoted standby has no row: it grants
// version 1 again while the holder's lease runs (10 s) — two holders with one fence, and the
// fence cannot tell their writes apart. Without the cut, asynchronous replication on loopback
// ships a row within milliseconds: the fault forces the lag a loaded or distant standby has.
//
// Measured on the local backend, seeds 1–3 each, every run giving the code below unless said;
// then 20 runs of every cell (`lockchaos matrix --topology postgres-standby --runs 20`): each 20 of 20 with evidence ok, but
// pg-lease × server-idle-timeout 19 of 20.
func init() {
	// The race this forces: right after the fault, the careful holder asks its dead session
	// (Valid), fails, skips its work and releases at once, while the waiters reconnect to the
	// promoted standby 40–350 ms after the fence. Unforced, the holder's release came first in 1
	// of 7 runs of pg-advisory-xact (safe, seed 1 --full; Us when run again), 0 of 8 of
	// pg-advisory. The first release
	// after the fault (the holder's: the others are still waiting or at work) is held until
	// another client holds (2 s at most), as a holder's release reaches the server late, so the
	// waiter is granted while the holder's lock still counts as held. (A stall at cs:acquired
	// would hit the waiter granted meanwhile: the failover holds the first holder at its point
	// until the promotion is done.)
	vary("failover", "@postgres-standby", Variant{Faults: []faults.Spec{
		{Kind: "failover", Point: "cs:acquired", Nodes: "master"},
		{Kind: "client-stall", Point: "cs:before-release", Until: "cs:acquired", For: fixed(2000)},
	}})
	standby := map[string]string{
		"baseline": "S",
		// Seeds 1–3 default and --full, and 20 of 20 seeds of pg-advisory-xact: the waiter granted
		// 53–357 ms in, 40–350 ms after the fence; 0 lost updates in every --full run.
		"failover": "Us: the promoted standby holds no advisory lock (never replicated); the holder's session died with the fenced primary, its Valid fails and it does not write",
		// As on postgres: the dead holder's links are black-holed, its session stays. Seed 3 of
		// pg-advisory gave unknown once (no write at all: a 281 ms stall of the harness), X when run again.
		"client-crash": "X: the dead holder's session stays open on the primary (no FIN; keepalive after the OS's 2 h)",
		"client-pause": "S: the primary holds the lock through the pause; the others wait",
		"clock-skew":   "S: no clock of a client plays a part",
		"slow-release": "S: the late unlock is the holder's own",
		// At cs:before-read (the sql variant): the primary restarts, every session and lock is
		// gone. 6 of 6 (pg-advisory) and 3 of 3 (xact) once a kill waits for the killed
		// backends (before, 3 restarts of 9 found the old shared memory still in use).
		"restart":               "Us: the primary's restart ends every session, and its locks, under a working holder",
		"clock-jump":            na("the fault shifts Redis key TTLs; a session lock has no TTL"),
		"partition":             "S: the session, and the lock, outlive the partition; the holder's Valid fails and it does not write",
		"latency":               "S",
		"getset-race":           na("the race is GETSET's own"),
		"node-kill":             "X: the primary is killed for good and nothing promotes the standby (no HA manager runs here: the failover fault is the one that promotes)",
		"zk-leader-kill":        na("no ZooKeeper leader"),
		"session-kill":          "Us: the primary ended the holder's session and granted the waiter; the holder asked and did not write",
		"pgbouncer-transaction": na("postgres-standby has no pooler (the scenario runs on postgres-pgbouncer)"),
		// 20 of 20 each: both servers run with the idle timeouts, as postgres's one.
		"server-idle-timeout": "Us: the primary ends the idle holder's session and grants the waiter; the holder asks and does not write",
	}
	ExpectOn("pg-advisory", "postgres-standby", standby)
	ExpectOn("pg-advisory-xact", "postgres-standby", standby)
	// Us by default: the run stops at the illegal grant (57–166 ms in), before the holder's write
	// at ≈4 s. With --full, 3 of 3 (and TestPostgresStandbyCells) lose 1 update each, where
	// pg-advisory loses none: what the mutant's missing Valid costs, which only a full run shows.
	ExpectOn("pg-advisory-no-valid", "postgres-standby", map[string]string{
		"failover": "Us: the holder that does not ask writes into the lock the promoted standby granted (a lost update with --full)",
	})

	// failover, 3 of 3 (and 3 of 3 with --full, each with 1 lost update: both holders read 0 and
	// wrote 1 under fence 1). Unforced (before the variant above), 6 of 6 Us, 1 lost update in 1:
	// in the others the new holder was granted version 2 before the old holder wrote, which was
	// then rejected as stale.
	ExpectOn("pg-lease", "postgres-standby", map[string]string{
		"baseline":     "S",
		"failover":     "Us: the lease row was committed on the primary only; the promoted standby grants version 1 again while the holder's lease runs",
		"client-crash": "S: the dead holder's lease expires on the server's clock",
		"client-pause": "Uc: the paused holder writes after its lease expired; its fence is rejected, no update lost",
		"clock-skew":   "S: the lease is timed by the server's now()",
		"slow-release": "S: the release matches owner and version",
		// restart: no expectation, as on postgres — the committed row survives the primary's
		// restart, so nobody else is granted in the danger window (unknown, 3 of 3).
		"clock-jump":            na("the fault shifts Redis key TTLs, not the server's now()"),
		"partition":             "S: the careful client's validity check stops the late write",
		"latency":               "S",
		"getset-race":           na("the race is GETSET's own"),
		"node-kill":             "X: the primary is killed for good and nothing promotes the standby",
		"zk-leader-kill":        na("no ZooKeeper leader"),
		"session-kill":          "S: the lease is a row, not a session",
		"pgbouncer-transaction": na("postgres-standby has no pooler (the scenario runs on postgres-pgbouncer)"),
		// 19 of 20 (the other unknown: one client was granted every time).
		"server-idle-timeout": "S: the lease is a row; the idle timeout ends only a session",
	})
}
