package scenarios

import "github.com/lockchaos/lockchaos/faults"

// pglock: cirello.io/pglock v1.16.1 over lib/pq (algorithms/pglock.go): a lease row whose record
// version number (RVN) the holder's heartbeat moves every TTL/3; a waiter that saw an RVN waits a
// whole lease on its own timer and steals the row if it did not move. No time is stored on the
// server, and the holder learns of a loss only from a heartbeat that fails (IsReleased), which the
// careful holder asks before it writes. It runs on postgres (and postgres-pgbouncer); lib/pq
// v1.10.9 takes one host, so not on postgres-standby.
//
// Measured with `lockchaos run --algorithm pglock --scenario S --seed N` on the local backend;
// see BENCHMARKS.md "Detection speed" for the 20-run rates.
func init() {
	// A waiter tries again only a lease after it found the row taken: a holder that acquires
	// again at once after its release wins the row back before any waiter looks. Under 1.5 s of
	// idle work (with the catalogue's 500 ms lease, or pg-lease's 2 s variant) only one client was
	// ever granted, 3 of 3 (unknown: nothing contended). Here holders think 2.5 s after a release,
	// longer than a waiter's 2 s between tries.
	vary("server-idle-timeout", "pglock", Variant{Workload: Workload{TTL: ms(2000), Think: ms(2500), Duration: ms(6000)}})
	// A waiter steals the row when two of its tries, a lease apart, see the same RVN — two tries
	// of one acquire, whose 2×TTL timeout leaves room for two. The catalogue's pause (TTL+400 ms
	// from the first write, 50 ms in) froze the RVN long enough only when a waiter's first try came
	// after the holder's first heartbeat (2 of 3 seeds; in the third every acquire under way had
	// seen the RVN move, and the next began 1 s in, after the pause). 3×TTL+400 ms spans a whole
	// acquire begun after the pause did, whatever the phase.
	vary("client-pause", "pglock", Variant{Faults: []faults.Spec{{Kind: "client-pause", Point: "cs:before-write", For: outlast(3, 400)}}})
	Expect("pglock", map[string]string{
		"baseline":              "S",
		"client-crash":          "S: the crashed holder's heartbeats stop, and a waiter steals the row a lease later",
		"client-pause":          "Uc: Kleppmann's GC pause — the paused holder's heartbeats stop with it, a waiter steals the row, and the holder writes before it learns",
		"clock-skew":            na("pglock times its waits with time.After, which the fault (the harness's Config.Clock) cannot reach; it stores no time, as its README says"),
		"slow-release":          "S: the release deletes the row only if its RVN is still ours",
		"failover":              na("one PostgreSQL server, and lib/pq v1.10.9 takes one host: no standby to fail over to"),
		"restart":               "S: the row survives the restart; the heartbeat that fails marks the holder's lock released",
		"clock-jump":            na("the fault shifts Redis key TTLs; pglock stores no time"),
		"partition":             "S: the cut-off holder's heartbeat holds its lock's mutex until it fails, so IsReleased answers only then: true, and the holder does not write",
		"latency":               "S",
		"getset-race":           na("the race is GETSET's own"),
		"node-kill":             "X: the only server is gone",
		"zk-leader-kill":        na("one PostgreSQL server: no ZooKeeper leader"),
		"session-kill":          "S: the lease is a row, not a session: the pool dials again",
		"pgbouncer-transaction": "S: each statement is its own transaction; no session state",
		"server-idle-timeout":   "S: the idle pooled sessions are ended; the heartbeat's are not idle, and the row stays",
	})
}
