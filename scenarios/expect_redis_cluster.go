package scenarios

// token on redis-cluster (`--topology redis-cluster`): the key "lock" hashes to one slot, whose
// master (redis-2 of 3) holds it and replicates it asynchronously to its one replica; a failover
// promotes the replica by an election of the other masters (cluster-node-timeout 500 ms). Seed 003
// discusses cluster mode: a single-master lock with failover, so the column matches token's on
// redis-sentinel where the failure is the master's, and node-kill differs: the cluster promotes
// the replica, which has the key.
//
// Measured with `lockchaos matrix --algorithms token,token+wait --topology redis-cluster --runs 2`
// (44 runs, 44 as expected) and, for failover, seeds 1–5: token Us 7 of 7, TTD 1.41–2.31 s
// after the kill at ≈40 ms (the cluster promotes the replica ≈1.5 s after the kill:
// cluster-node-timeout 500 ms, the FAIL gossip and the replica's 500–1000 ms election delay).
// restart is Us ≈2.1 s in: a restarted master waits 2 s (Redis's CLUSTER_WRITABLE_DELAY) before
// its cluster_state is ok and it serves again, empty.
func init() {
	// node-kill: the cluster promotes the slot's replica 0.9–1.4 s after the kill
	// (cluster-node-timeout 500 ms, the FAIL gossip, the replica's 500–1000 ms election delay),
	// which the catalogue's 1.5 s stuck limit cut in 2 of 20 quiet runs and 7 of 20 loaded ones:
	// a failover working as designed, not a lock stuck. 2.5 s here, and 4 s runs.
	vary("node-kill", "@redis-cluster", Variant{Workload: Workload{StuckAfter: ms(2500), Duration: ms(4000)}})
	ExpectOn("token", "redis-cluster", map[string]string{
		"baseline":              "S",
		"client-crash":          "S: the dead holder's key expires",
		"client-pause":          "Uc: Kleppmann's GC pause",
		"clock-skew":            "S: the lease is the server's",
		"slow-release":          "S: compare-and-delete",
		"failover":              "Us: the promoted replica never saw the key (replication cut from the start, seed 003 master/slave table)",
		"restart":               "Us: the slot's master restarts empty (faster than cluster-node-timeout: no failover) and its replica resyncs from it",
		"clock-jump":            "Us: the key expires early on the master, and the expiry replicates",
		"partition":             "S: the careful client's validity check stops the late write",
		"latency":               "S",
		"getset-race":           na("the race is GETSET's own"),
		"node-kill":             "S: the kill at 500 ms finds the key replicated (loopback replication takes microseconds); the replica is promoted with it and grants resume ≈1.5 s later (failover forces the lag)",
		"zk-leader-kill":        na("a ZooKeeper scenario"),
		"session-kill":          na("Redis Cluster has no session the lock lives in"),
		"server-idle-timeout":   na("Redis Cluster has no session the lock lives in"),
		"pgbouncer-transaction": na("not a PostgreSQL lock"),
	})
}
