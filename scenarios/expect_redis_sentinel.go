package scenarios

// token on redis-sentinel (`--topology redis-sentinel`), the topology's reference lock everywhere
// (algorithms.Info.ReferenceOn), not for failover alone: one master, its replica and three
// Sentinels; the lock is the master's key, so every fault but failover meets it as on one Redis.
// A user's lock tested there with locktest.WithExpectationsOf("token") is held to this column.
//
// Measured with `lockchaos matrix --algorithms token --topology redis-sentinel --runs 3`
// (2026-11-29): every cell below 3 of 3, each with its evidence; failover keeps its own cell
// (the "redis" family's variant runs it here already: Us).
func init() {
	// node-kill: Sentinel promotes the replica (the first Sentinel's down-after is 500 ms, then
	// its election) and the clients' failover clients follow it: grants resumed 1.6–2.2 s after
	// the kill at 500 ms (token 3 of 3, a user's go-redis lock 2 of 2), which the catalogue's 1.5 s
	// stuck limit, counted from a lease after the kill, cut when it took more than 2 s: a failover
	// working as designed, not a lock stuck (as redis-cluster's, expect_redis_cluster.go).
	vary("node-kill", "@redis-sentinel", Variant{Workload: Workload{StuckAfter: ms(3000), Duration: ms(4000)}})
	ExpectOn("token", "redis-sentinel", map[string]string{
		"baseline":              "S",
		"client-crash":          "S: the dead holder's key expires",
		"client-pause":          "Uc: Kleppmann's GC pause: no lease outlives a holder paused past it",
		"clock-skew":            "S: the lease is the server's",
		"slow-release":          "S: compare-and-delete",
		"restart":               "Us: the master restarts empty (no fsync) and Sentinel keeps it master",
		"clock-jump":            "Us: the key expires early when the master's clock jumps",
		"partition":             "S: the careful client's validity check stops the late write",
		"latency":               "S",
		"getset-race":           na("the race is GETSET's own"),
		"node-kill":             "S: Sentinel promotes the replica, which has the key (replication is not cut), and the clients follow it",
		"zk-leader-kill":        na("a ZooKeeper scenario"),
		"session-kill":          na("Redis has no session the lock lives in"),
		"server-idle-timeout":   na("Redis has no session the lock lives in"),
		"pgbouncer-transaction": na("not a PostgreSQL lock"),
	})
}
