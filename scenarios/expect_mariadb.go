package scenarios

// Locks on MariaDB (docs/design.md#session-locks-and-more-services): mysql-get-lock (algorithms/mysql_get_lock.go), GET_LOCK on a
// session of its own. It is a session lock as pg-advisory is, and of the same "sql" family
// (Family): the server holds it while the session lives, with no TTL, and drops it when the
// session ends (a KILL, a restart, a disconnect); the careful client's Valid asks the server
// (IS_USED_LOCK(name) = CONNECTION_ID()). Where MariaDB's GET_LOCK differs from
// pg_advisory_lock — its wait is bounded by its own timeout (the acquire's time left), a string
// name, no transaction-level variant, and a killed session gets no error packet (the driver reads
// EOF) — none changes a cell.

func init() {
	// Measured on the local backend: `lockchaos run
	// --algorithm mysql-get-lock --scenario X --seed N`, seeds 1–3, every run gave the code below
	// (mysql-get-lock-no-valid: session-kill, partition and restart, seeds 1–3).
	// Where a cell's mechanism is pg-advisory's, so is its code (sessionLockCells, expect_postgres.go):
	// baseline (157–158 writes a run, evidence ok), clock-skew, slow-release, latency, node-kill,
	// restart (the sql variant at cs:before-read: another client granted 131–145 ms in, 0 lost
	// updates), partition (the session outlives it; the holder's Valid times out and it does not
	// write: 16 writes, 6 in the danger window), clock-jump and getset-race n/a. The rest:
	cells := sessionLockCells()
	// client-crash black-holes the crashed holder's links (faults/client.go): no FIN reaches the
	// server, so the session and its lock stay until wait_timeout (8 h) or TCP keepalive (the
	// OS's 2 h). 3 of 3 stuck, as pg-advisory.
	cells["client-crash"] = "X: the dead holder's session stays open (no FIN; wait_timeout 8 h)"
	// client-pause holds the paused holder's links (faults/client.go): its session outlives the
	// pause, as a stopped process's does, and the server holds the lock through it: seeds 1–3
	// safe (162–163 writes, 84–85 in the danger window), as pg-advisory. Before the pause held
	// the links it black-holed them, and toxiproxy closed them at the heal, which ended the
	// session and its lock: Us in 3 of 3, a harness effect this cell found.
	cells["client-pause"] = "S: the server holds the lock through the pause; the others wait"
	cells["failover"] = na("one MariaDB server: no replica to promote")
	cells["zk-leader-kill"] = na("one MariaDB server: no ZooKeeper leader")
	// The waiter is granted 1–5 ms after the KILL, while the holder is busy (the scenario's stall
	// until another client holds): the lock model (no TTL) sees a grant while the lock was held.
	// The careful holder asks and skips its write: 0 lost updates. Before the stall, the kill at
	// the first grant (and later at the second) left the order to the scheduler: 1 selftest run
	// under load safe each time (the holder's release recorded before the waiter's grant).
	// `selftest --scenarios session-kill --runs 10` beside two CPU-bound loops: 10 of
	// 10, the mutant caught 10 of 10 (1 lost update each); `make reproduce`'s 20 runs: 20 of 20
	// and 20 of 20 (BENCHMARKS.md).
	cells["session-kill"] = "Us: the server ended the holder's session and granted the waiter; the holder asked and did not write"
	cells["pgbouncer-transaction"] = na("not a PostgreSQL lock")
	// wait_timeout=1: seeds 1–3, the waiter granted 1.00 s in; the holder asks and does not write.
	Expect("mysql-get-lock", cells)
	// 3 of 3: 1 lost update each, the waiter granted 2–4 ms after the kill. (The mutant's partition runs were
	// safe, 3 of 3, as the session outlives the partition; its restart runs unsafe-service with 0
	// lost updates, 3 of 3.)
	catch("session-kill", "mysql-get-lock-no-valid", "Ul: the holder whose session was killed writes while the next client holds")
	catch("server-idle-timeout", "mysql-get-lock-no-valid", "Us: wait_timeout ends the idle holder's session and the waiter is granted (3 of 3)")
}
