package scenarios

import "github.com/lockchaos/lockchaos/faults"

// token+wait (algorithms/token_wait.go): token, then WAIT 1 on the same connection, as Redisson
// does since redisson/redisson #2669; an acquire no replica acknowledged is deleted and fails. Its
// default topology is redis-sentinel; ExpectOn gives its redis-cluster column.
//
// Measured on the local backend (2 cores shared with three other engineers' builds), with
// `lockchaos matrix --algorithms token+wait --runs 3` and `--topology redis-cluster --runs 2`:
// every cell as below, except two runs that were unknown, never a wrong verdict: failover on
// redis-sentinel seed 1, where a 607 ms harness stall (machine overloaded) 10.7 s in pushed the
// liveness window past the run's end (stuck needs 1.5 s without a grant after the last heal and
// one TTL), and restart seed 2, where the compare-and-delete of an unacknowledged key went out on
// a new connection that the restarting master reset, so the key stayed for its TTL and nobody
// contended the holder's lease (since then an attempt's SET, WAIT and delete share one connection;
// restart now runs on redis-cluster, see below). What WAIT buys is failover on redis-cluster: S 7 of 7 with evidence, where
// token is Us; what it does not: restart and clock-jump (the master itself forgets the key, and
// the replica follows it), and availability: with no replica to acknowledge, nothing is granted
// (failover on redis-sentinel, node-kill on both: X).
func init() {
	Expect("token+wait", map[string]string{
		"baseline":       "S",
		"client-crash":   "S: the dead holder's key expires",
		"client-pause":   "Uc: WAIT changes nothing for a holder that stops past its lease",
		"clock-skew":     "S: the lease is the server's",
		"slow-release":   "S: compare-and-delete",
		"failover":       "X: no acquire is acknowledged with replication cut; after the promotion the new master has no replica, so WAIT 1 never succeeds again (redisson #4706)",
		"restart":        "Us: (on redis-cluster) the master restarts empty and its replica resyncs from it: the acknowledged key is gone from both",
		"clock-jump":     "Us: the key expires early on the master, and the expiry replicates",
		"partition":      "S: the careful client's validity check stops the late write",
		"latency":        "S",
		"getset-race":    na("the race is GETSET's own"),
		"node-kill":      "X: the master is killed at 500 ms: nothing is granted until Sentinel promotes the replica, which has no replica of its own: WAIT 1 never succeeds again",
		"zk-leader-kill": na("a ZooKeeper scenario"),
	})
	ExpectOn("token+wait", "redis-cluster", map[string]string{
		"baseline":              "S",
		"client-crash":          "S: the dead holder's key expires",
		"client-pause":          "Uc: WAIT changes nothing for a holder that stops past its lease",
		"clock-skew":            "S: the lease is the server's",
		"slow-release":          "S: compare-and-delete",
		"failover":              "S: no unacknowledged key is used; the killed master rejoins as a replica and grants resume, where token is Us",
		"restart":               "Us: the slot's master restarts empty (faster than cluster-node-timeout: no failover) and its replica resyncs from it",
		"clock-jump":            "Us: the key expires early on the master, and the expiry replicates",
		"partition":             "S: the careful client's validity check stops the late write",
		"latency":               "S",
		"getset-race":           na("the race is GETSET's own"),
		"node-kill":             "X: the replica is promoted with the key, but has no replica of its own: WAIT 1 never succeeds again",
		"zk-leader-kill":        na("a ZooKeeper scenario"),
		"session-kill":          na("Redis Cluster has no session the lock lives in"),
		"server-idle-timeout":   na("Redis Cluster has no session the lock lives in"),
		"pgbouncer-transaction": na("not a PostgreSQL lock"),
	})
	ExpectOn("token+wait-ignore", "redis-cluster", map[string]string{
		"failover": "Us: the unacknowledged key was on the master only; the promoted replica grants it again",
	})
	// failover: with the replication cut from the start no acquire is ever acknowledged, so the
	// real lock never holds and the catalogue's kill at cs:acquired would never fire (no
	// evidence). The kill comes at 1.5 s instead, whoever holds: the mutant, which took the
	// unacknowledged key, is caught when the promoted replica (which never saw it) grants it again.
	//
	// redis-sentinel: the promoted replica has no replica of its own (the old master is dead), so
	// WAIT 1 never succeeds again and the real lock is stuck: safe, unavailable (redisson #4706,
	// "None of slaves were synced"). A restart of the old master does not help within a run:
	// Sentinel reconfigured it as a replica only ≈10 s later (measured, seed 1). Stuck needs the
	// liveness window after the heal plus one TTL of grace: a TTL of 6 s (the mutant's lease still
	// outlasts the promotion, ≈2 s after the kill) and a tail of 8 s.
	vary("failover", "token+wait", Variant{
		Faults:   []faults.Spec{{Kind: "failover", At: ms(1500), Nodes: "master"}},
		Workload: Workload{TTL: ms(6000), Hold: ms(1000), Duration: ms(5000), StuckAfter: ms(1500), Tail: ms(8000)},
	})
	// redis-cluster: the killed master (redis-2, the master of the slot of "lock") is restarted at
	// 4 s; empty, it rejoins with its nodes.conf as the promoted replica's replica within
	// milliseconds, WAIT is acknowledged again and the real lock grants again under the fault's
	// window: safe with evidence, where token (no WAIT) is unsafe.
	vary("failover", "token+wait@redis-cluster", Variant{
		Faults: []faults.Spec{
			{Kind: "failover", At: ms(1500), Nodes: "master"},
			{Kind: "restart", At: ms(4000), Nodes: "redis-2"},
		},
		Workload: Workload{TTL: ms(6000), Hold: ms(1000), Duration: ms(7000), Tail: ms(1500)},
	})
	// restart runs on redis-cluster: on redis-sentinel it was Us in 11 of 14 runs, and seed 2 was
	// unknown in all 3 of its runs: Sentinel failed the restarted master over ≈3 s later (the replica's log:
	// "MASTER MODE enabled" by a sentinel), the promoted replica had no replica, WAIT failed, and
	// a key whose SET's outcome was unknown kept every client waiting to the end — a cell that
	// may or may not fail is no expectation (docs/design.md#evidence). On redis-cluster a restart (≈2 s,
	// CLUSTER_WRITABLE_DELAY) is faster than failure detection plus election and the replica
	// resyncs from the empty master: Us 7 of 7, TTD 2.07–2.19 s.
	vary("restart", "token+wait", Variant{Topology: "redis-cluster"})
	catch("failover", "token+wait-ignore", "Us: the unacknowledged key was on the master only; the promoted replica grants it again")
}
