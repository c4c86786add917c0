package scenarios

// The fenced variants (this file and expect_zookeeper_fence.go): token+fence (the token lock with a fence from INCR on the same Redis) and
// zookeeper+fence (the zookeeper recipe with the lock node's creation zxid as fence). Both have
// Info.Fenced, so the runner turns the resource's fence check on (Workload.Fencing) in every
// scenario: a late write with an old fence is rejected.
//
// An exclusion violation is still a violation (docs/design.md#checks: a rejected write counts as an
// access), so the codes match the unfenced columns wherever the holder's own timing is the
// failure; what fencing changes is the lost-update count, which must be 0 there (checked by the
// tests of these files' algorithms and reported in result.json).
//
// Sources: Kleppmann, "How to do distributed locking" (2016), "Making the lock safe with
// fencing": the lock service must hand out monotonically increasing tokens, and a fence taken
// from the same unreplicated store as the lock (token+fence after a failover) goes backwards with
// it. ZooKeeper's zxid (and etcd's revision) is his example of a good token.
func init() {
	Expect("token+fence", map[string]string{
		"baseline":       "S",
		"client-crash":   "S",
		"client-pause":   "Uc: Kleppmann's GC pause; the late write is rejected by its fence, no update is lost",
		"clock-skew":     "S",
		"slow-release":   "S: compare-and-delete",
		"failover":       "Us: the promoted replica never saw the lock nor the counter: the fence goes backwards and updates are lost",
		"restart":        "Us: the restarted master forgets the lock and the counter",
		"clock-jump":     "Us: the key expires early; the counter survives, so fences still reject the stale write",
		"partition":      "S: the careful client's validity check stops the late write",
		"latency":        "S",
		"getset-race":    na("the race is GETSET's own"),
		"node-kill":      "X: the only master is gone",
		"zk-leader-kill": na("a ZooKeeper scenario"),
	})
	// The failover must run until the new holder writes: it was granted ≈2.5 s in, holds 4 s,
	// and writes with a fence equal to the old holder's (both counters started from the last
	// replicated value), so the resource accepts both increments from the same read: a lost
	// update that fencing was meant to prevent.
	vary("failover", "token+fence", Variant{Topology: "redis-sentinel", Workload: Workload{Duration: ms(8000)}})
}
