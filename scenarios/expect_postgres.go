package scenarios

import (
	"maps"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
)

// Locks on PostgreSQL (docs/design.md#session-locks-and-more-services): pg-advisory and pg-advisory-xact (algorithms/
// pg_advisory.go), session locks, and pg-lease (algorithms/pg_lease.go), a lease row. The server holds a session lock for as long as the session lives, with no TTL
// (Lease.TTL 0: the checker's lock model never lets it expire), through any pause of the holder,
// and drops it when the session ends; the holder learns it only at its next statement, so the
// careful client's Valid asks the server. Their variants are the "sql" family's (Family): the
// Redis variants, whose wire points parse RESP, do not apply.

var _ = registerSQLScenarios()

func registerSQLScenarios() bool {
	register(Scenario{
		Name: "session-kill",
		Summary: "The server ends the first holder's session right after it acquired (PostgreSQL's " +
			"pg_terminate_backend, MariaDB's KILL, as an admin, a pooler or an idle-session timeout does); the holder " +
			"is busy until another client holds the lock (250 ms at most) and learns it only at its next statement.",
		Reproduces: "docs/design.md#session-locks-and-more-services: a session lock is dropped with its session; the waiter is granted at once",
		Needs:      "a server that can end a client's sessions (postgres topologies, mariadb); the kill at cs:acquired",
		Workload:   std.merge(Workload{StuckAfter: ms(1500)}),
		// The holder's next statement comes after the waiter's grant (client-stall until
		// cs:before-read), not whenever the scheduler lets it: without the stall, a loaded machine
		// (a CI selftest) recorded the waiter's grant after the holder's release in 1 run of 207
		// cells — a safe run, the holder having asked before anyone held the lock, where the
		// scenario is about the holder that has not asked yet. 250 ms bounds it: a lock that
		// keeps the holder's lock through the kill grants nobody, and its holder then goes on.
		Faults: []faults.Spec{
			{Kind: "session-kill", Point: "cs:acquired"},
			{Kind: "client-stall", Point: "cs:acquired", Until: "cs:before-read", For: leases(3, 0)},
		},
	})
	// pgbouncer in transaction mode hands each transaction to any of its pooled server sessions
	// (2 here, for 5 clients). pg_advisory_lock holds the lock in the session that ran it, which
	// goes back to the pool: another client's pg_advisory_lock that lands in that session is
	// granted at once (a session may take its own advisory lock again), and the holder's unlock
	// lands in a session that does not hold it, returns false, and strands the lock
	// (pgbouncer/pgbouncer#102: the lock not released after 1.7 stopped resetting sessions in
	// transaction mode; #418: sessions reused without DISCARD ALL, the lock left held;
	// goauthentik/authentik#23876: the migration lock stranded on a pooled backend until
	// server_lifetime, 3600 s). The careful client's Valid asks the session its query lands in.
	register(Scenario{
		Name: "pgbouncer-transaction",
		Summary: "No faults: the clients reach PostgreSQL through pgbouncer in transaction pooling mode (2 server " +
			"sessions for 5 clients); a session lock is taken in whichever pooled session ran the statement.",
		Reproduces: "pgbouncer/pgbouncer#102 and #418; goauthentik/authentik#23876 (a session advisory lock through a transaction pooler)",
		Needs:      "transaction pooling with fewer server sessions than clients",
		Workload:   std.merge(Workload{StuckAfter: ms(1500)}),
		Variants:   map[string]Variant{"sql": {Topology: "postgres-pgbouncer"}},
		Requires:   []cluster.Trait{cluster.TraitPooler},
	})
	// A server setting, not a fault: PostgreSQL's idle_session_timeout (and
	// idle_in_transaction_session_timeout) or MariaDB's wait_timeout ends a session that sent no
	// statement for that long — a common setting against leaked connections. A holder that works
	// longer than it without a statement on its lock's session loses the session and the lock,
	// and learns it only at its next statement; a waiter is granted meanwhile.
	register(Scenario{
		Name: "server-idle-timeout",
		Summary: "No faults: the SQL server ends sessions idle for 1 s (PostgreSQL's idle_session_timeout, MariaDB's " +
			"wait_timeout), and each holder works 1.5 s between its read and its write without a statement on its lock's session.",
		Reproduces: "docs/design.md#session-locks-and-more-services: the server's idle settings decide how soon a session, and its lock, is dropped",
		Needs:      "a holder idle on its session for longer than the server's idle timeout",
		Workload:   std.merge(Workload{Hold: ms(1500), ServerIdleTimeout: ms(1000), Duration: ms(3000), StuckAfter: ms(2500)}),
	})
	sqlVariants()
	return true
}

// sqlVariants gives the sql family its variants as the scenarios register, before any init's
// expectations resolve a cell of theirs.
func sqlVariants() {
	// The Redis variants act on RESP commands on the wire; the sql family gets the same faults
	// at the harness's own points or timed, as etcd does.
	vary("slow-release", "sql", Variant{Faults: []faults.Spec{{Kind: "slow-release", Point: "cs:before-release", Skip: 3,
		Amount: leases(2, 300), For: leases(3, 0)}}})
	// restart at cs:before-read: the holder found its lock valid and works (700 ms) while the
	// server restarts and every session, with every lock, is gone. At cs:acquired (the catalogue's
	// point) the holder asks the server right after the restart and gives up at once, before the
	// others have reconnected: the cell was a race (safe at seed 1).
	vary("restart", "sql", Variant{Faults: []faults.Spec{{Kind: "restart", Point: "cs:before-read", Nodes: "master"}}})
	// pg-lease's holders must write within their lease for the cell to show anything: a 2 s TTL
	// outlasts the 1.5 s of work (with the catalogue's 500 ms every holder's lease ran out first
	// and nobody wrote: unknown). A 4 s run has two or three grants, and in 4 of 20 runs (make
	// reproduce) the releasing holder took the lock again before any waiter's retry
	// both times: one client, nothing contended, unknown. 6 s runs have four or five.
	vary("server-idle-timeout", "pg-lease", Variant{Workload: Workload{TTL: ms(2000), Duration: ms(6000)}})
	vary("latency", "sql", Variant{Faults: []faults.Spec{{Kind: "latency", At: ms(300), For: fixed(1500), Nodes: "master", Amount: fixed(ttl/2 + 50)}}})
	// SQL links are not parsed (docs/design.md#wire-points): the crash is the harness's own point's.
	vary("client-crash", "sql", Variant{Faults: []faults.Spec{{Kind: "client-crash", Point: "cs:acquired"}}})
	// A session lock outlives the partition (the server keeps the cut-off holder's session), so
	// nobody takes it over meanwhile: the partition lasts its whole cap, as it always did, rather
	// than wait for a takeover that cannot come (docs/design.md#faults-sized-to-the-lease). That is
	// the sql family's variant, so a user's session lock or a process client's gets it as the
	// built-ins do; the lease rows, which a waiter does take over once their lease ran out, keep
	// the catalogue's partition healed at the takeover.
	vary("partition", "sql", Variant{Faults: heldFor(partition)})
	for _, a := range []string{"pg-lease", "pglock"} {
		vary("partition", a, Variant{Faults: partition})
	}
	// The same for a pause: the session outlives it, nobody takes the lock over, and the fixed
	// pause of lease + 400 ms is kept; pg-lease's lease row is taken over, so it gets the
	// catalogue's pause that lasts until another client holds (pglock has its own, expect_pglock.go).
	vary("client-pause", "sql", Variant{Faults: clientPauseFixed})
	vary("client-pause", "pg-lease", Variant{Faults: clientPause})
}

func init() {

	// Measured on the local backend (seeds 1–5 unless
	// said; pg-advisory-xact seeds 1–3, 1–5 for session-kill and pgbouncer-transaction): every
	// run gave the code below.
	session := sessionLockCells()
	adv := maps.Clone(session)
	// 5 of 5 seeds: 284–483 illegal grants and hundreds of lost updates per 2 s run, the first at
	// 10–22 ms. The checker's cause is its generic one ("no fault or release in the history
	// explains it"): the history cannot show which pooled session a statement ran in.
	adv["pgbouncer-transaction"] = "Us: a lock taken in a pooled session is granted again to any client whose statement lands there"
	Expect("pg-advisory", adv)
	xact := maps.Clone(session)
	// 5 of 5 seeds safe: the open transaction pins its server session until COMMIT.
	xact["pgbouncer-transaction"] = "S: the open transaction pins its pooled session until COMMIT"
	Expect("pg-advisory-xact", xact)

	// pg-lease: a lease row on the server's clock, its version the fence (the runner turns the
	// resource's fence check on). Seeds 1–5 each (restart 1–2); client-pause: 5 of 5
	// with the stale write rejected, 0 lost updates. restart is left without an
	// expectation: the committed row survives the restart, so nobody else is granted within the
	// danger window (restart's 4 s TTL after a 2–15 s recovery): unknown by the evidence rule,
	// 1 run of 2; the other restart did not come back within the 15 s of then.
	Expect("pg-lease", map[string]string{
		"baseline":       "S",
		"client-crash":   "S: the dead holder's lease expires on the server's clock",
		"client-pause":   "Uc: the paused holder writes after its lease expired; its fence is rejected, no update lost",
		"clock-skew":     "S: the lease is timed by the server's now(); the skewed clock only shortens its own validity",
		"slow-release":   "S: the release matches owner and version",
		"failover":       na("one PostgreSQL server: no standby to promote (run it with --topology postgres-standby)"),
		"clock-jump":     na("the fault shifts Redis key TTLs, not the server's now()"),
		"partition":      "S: the careful client's validity check stops the late write",
		"latency":        "S",
		"getset-race":    na("the race is GETSET's own"),
		"node-kill":      "X: the only server is gone",
		"zk-leader-kill": na("one PostgreSQL server: no ZooKeeper leader"),
		"session-kill":   "S: the lease is a row, not a session: ending the session changes nothing",
		// Each upsert is one transaction: any pooled session may run it.
		"pgbouncer-transaction": "S: each statement is its own transaction; no session state",
		// Seeds 1–3 (the 2 s lease of the variant): the idle sessions are ended, the lease rows stay.
		"server-idle-timeout": "S: the lease is a row on the server's clock; an ended session changes nothing",
	})
	catch("pgbouncer-transaction", "pg-advisory-no-valid", "Us: as pg-advisory: two clients' locks land in one pooled session")
	catch("session-kill", "pg-advisory-no-valid", "Ul: the holder whose session was killed writes while the next client holds")
	// 3 of 3: the grant to the waiter decides the run (it stops once decided, before the idle
	// holder's blind write lands), so the catch is the real lock's Us.
	catch("server-idle-timeout", "pg-advisory-no-valid", "Us: the idle holder's session is ended and the waiter granted")
}

// sessionLockCells are pg-advisory's cells, which a session lock on one server shares
// (mysql-get-lock starts from them: expect_mariadb.go).
func sessionLockCells() map[string]string {
	return map[string]string{
		"baseline": "S",
		// client-crash black-holes the crashed holder's links (faults/client.go): no FIN reaches
		// the server, so the session — and the lock — stays until TCP keepalive gives up on it
		// (PostgreSQL's default leaves that to the OS: 2 h). 5 of 5 stuck, as a dead host is.
		"client-crash": "X: the dead holder's session stays open (no FIN; keepalive after the OS's 2 h)",
		"client-pause": "S: the server holds the lock through the pause; the others wait",
		"clock-skew":   "S: no clock of a client plays a part",
		"slow-release": "S: the late unlock is the holder's own; nobody else could hold meanwhile",
		"failover":     na("one PostgreSQL server: no standby to promote (run it with --topology postgres-standby)"),
		// At cs:before-read (variant above): the holder works under a lock the restarted server no
		// longer has; another client is granted before it asks again (and skips its write). 8 of 8
		// seeds; a 9th restart (seed 5, before initdb synced its files) did not come back in 15 s.
		"restart":    "Us: the restart ends every session, and its locks, under a working holder",
		"clock-jump": na("the fault shifts Redis key TTLs; a session lock has no TTL"),
		// The server keeps the cut-off holder's session (and lock) until the partition heals and
		// the holder's close arrives; the holder's Valid times out, so it skips its write.
		"partition":      "S: the session, and the lock, outlive the partition; the holder's Valid fails and it does not write",
		"latency":        "S",
		"getset-race":    na("the race is GETSET's own"),
		"node-kill":      "X: the only server is gone",
		"zk-leader-kill": na("one PostgreSQL server: no ZooKeeper leader"),
		// The waiter is granted the moment the holder's session ends, before the holder's next
		// statement: the lock model (no TTL) sees a grant while the lock was held. The careful
		// holder's Valid asks the server and skips its write: 0 overlapping writes, 0 lost updates;
		// pg-advisory-no-valid writes into the next holder's lock (scenarios/catches.go: Ul).
		"session-kill": "Us: the server ended the holder's session and granted the waiter; the holder asked and did not write",
		// Seeds 1–3 each: the waiter is granted 1.00–1.05 s in, the moment the idle
		// holder's session is ended; the holder asks before it writes and does not (0 lost updates).
		"server-idle-timeout": "Us: the server ended the idle holder's session and granted the waiter; the holder asked and did not write",
	}
}

// pg-advisory-xact on postgres-pgbouncer, the topology's reference lock (a session lock through
// transaction pooling is unsafe even in baseline): measured with `lockchaos matrix --algorithms
// pg-advisory-xact --topology postgres-pgbouncer --runs 3` (2026-11-29), every cell 3 of 3 with
// its evidence. restart differs from postgres's Us: clients reach the server again only through
// pgbouncer's login retry (1 s, cluster/pgbouncer.go), by when the holder's aborted transaction
// has ended its acquisition, and the next grant is legal.
func init() {
	ExpectOn("pg-advisory-xact", "postgres-pgbouncer", map[string]string{
		"baseline":              "S",
		"client-crash":          "X: the dead holder's transaction stays open (its links black-holed), pinning its pooled server session and the lock",
		"client-pause":          "S: the server holds the lock through the pause; the others wait",
		"clock-skew":            "S: no clock of a client plays a part",
		"slow-release":          "S: the late COMMIT is the holder's own; nobody else could hold meanwhile",
		"failover":              na("one PostgreSQL server: no standby to promote (run it with --topology postgres-standby)"),
		"restart":               "S: the restart aborts the holder's transaction; pgbouncer lets clients in again after its login retry, and the next grant comes after the holder's acquisition ended",
		"clock-jump":            na("the fault shifts Redis key TTLs; a session lock has no TTL"),
		"partition":             "S: the transaction, and the lock, outlive the partition; the holder's Valid fails and it does not write",
		"latency":               "S",
		"getset-race":           na("the race is GETSET's own"),
		"node-kill":             "X: the only server is gone",
		"zk-leader-kill":        na("one PostgreSQL server: no ZooKeeper leader"),
		"session-kill":          "Us: the server ended the holder's pooled session and granted the waiter; the holder asked and did not write",
		"server-idle-timeout":   "Us: the server ended the idle holder's pooled session and granted the waiter; the holder asked and did not write",
		"pgbouncer-transaction": "S: the open transaction pins its pooled session until COMMIT",
	})
}
