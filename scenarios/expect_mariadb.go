package scenarios

import "github.com/lockchaos/lockchaos/faults"

// Locks on MariaDB (DESIGN.md §15): mysql-get-lock (algorithms/mysql_get_lock.go), GET_LOCK on a
// session of its own. It is a session lock as pg-advisory is, and of the same "sql" family
// (Family): the server holds it while the session lives, with no TTL, and drops it when the
// session ends (a KILL, a restart, a disconnect); the careful client's Valid asks the server
// (IS_USED_LOCK(name) = CONNECTION_ID()). Where MariaDB's GET_LOCK differs from
// pg_advisory_lock — its wait is bounded by its own timeout (the acquire's time left), a string
// name, no transaction-level variant, and a killed session gets no error packet (the driver reads
// EOF) — none of the cells below differs from pg-advisory's for it.

func init() {
	// The kill at the second grant's cs:acquired: at the first, 6 ms into the run, a loaded
	// machine's waiters may still be connecting (a selftest run here: the waiter's GET_LOCK left
	// 1 ms after the kill), so none waits in the server when the lock goes, and the holder, whose
	// Valid failed on the killed session, released before anyone was granted: safe, where a waiter
	// already queued is granted at once.
	vary("session-kill", "mysql-get-lock", Variant{Faults: []faults.Spec{{Kind: "session-kill", Point: "cs:acquired", Skip: 1}}})
	// Measured on the local backend, 2026-11-26, on this 2-core machine: `lockchaos run
	// --algorithm mysql-get-lock --scenario X --seed N`, seeds 1–3, every run gave the code below
	// (mysql-get-lock-no-valid: session-kill, partition and restart, seeds 1–3).
	Expect("mysql-get-lock", map[string]string{
		// 157–158 writes per run, evidence ok.
		"baseline": "S",
		// client-crash black-holes the crashed holder's links (faults/client.go): no FIN reaches the
		// server, so the session and its lock stay until wait_timeout (8 h) or TCP keepalive (the
		// OS's 2 h). 3 of 3 stuck, as pg-advisory.
		"client-crash": "X: the dead holder's session stays open (no FIN; wait_timeout 8 h)",
		// Unlike a real pause: the fault's heal removes the toxics that silenced the paused holder's
		// links, and toxiproxy closes a connection whose timeout toxic is removed (faults/client.go,
		// silence). The close ends the holder's session and its lock, a waiter is granted as the
		// 900 ms pause (from 14 ms) ends, and the holder resumes past its validity check and writes: 1 lost update in each of
		// 3 runs, the grant at 916–919 ms. pg-advisory does the same on this tree (seed 1: unsafe,
		// 1 lost update), against its "S" in expect_postgres.go.
		"client-pause": "Us: the pause's heal closes the holder's proxied connection, which ends its session and lock; it writes after",
		"clock-skew":   "S: no clock of a client plays a part",
		"slow-release": "S: the late unlock is the holder's own; nobody else could hold meanwhile",
		"failover":     na("one MariaDB server: no replica to promote"),
		// At cs:before-read (the sql variant, expect_postgres.go): the restart ends every session and
		// lock under a working holder, another client is granted 131–145 ms in; the holder asks and
		// does not write (0 lost updates).
		"restart":    "Us: the restart ends every session, and its locks, under a working holder",
		"clock-jump": na("the fault shifts Redis key TTLs; a session lock has no TTL"),
		// The session outlives the partition (the bytes wait in the proxy); the holder's Valid
		// times out, it drops the session and does not write. 16 writes, 6 in the danger window.
		"partition":      "S: the session, and the lock, outlive the partition; the holder's Valid fails and it does not write",
		"latency":        "S",
		"getset-race":    na("the race is GETSET's own"),
		"node-kill":      "X: the only server is gone",
		"zk-leader-kill": na("one MariaDB server: no ZooKeeper leader"),
		// The waiter is granted 3–6 ms after the KILL, before the holder's next statement: the lock
		// model (no TTL) sees a grant while the lock was held. The careful holder asks and skips its
		// write: 0 lost updates. Seeds 1–3 with the kill at the second grant (the variant above);
		// with it at the first, 13 of 13 sequential runs gave Us and 1 selftest run under load safe.
		// selftest --scenarios session-kill --runs 5 with the variant: 5 of 5, the mutant caught 5 of 5.
		"session-kill":          "Us: the server ended the holder's session and granted the waiter; the holder asked and did not write",
		"pgbouncer-transaction": na("not a PostgreSQL lock"),
	})
	// 3 of 3 (the variant's kill): 1 lost update each, the waiter granted 2–4 ms after the kill. (The mutant's partition runs were
	// safe, 3 of 3, as the session outlives the partition; its restart runs unsafe-service with 0
	// lost updates, 3 of 3.)
	catch("session-kill", "mysql-get-lock-no-valid", "Ul: the holder whose session was killed writes while the next client holds")
}
