package scenarios

// zookeeper+fence: see expect_token_fence.go for what fencing changes and the sources.
func init() {
	Expect("zookeeper+fence", map[string]string{
		"baseline":       "S",
		"client-crash":   "S",
		"client-pause":   "Uc: the session expires under the paused holder; its late write is rejected by its zxid, no update is lost",
		"clock-skew":     "S",
		"slow-release":   "S",
		"failover":       na("ZooKeeper has no asynchronous failover; see zk-leader-kill"),
		"restart":        "S: one of three restarts, the quorum keeps the lock",
		"clock-jump":     na("ZooKeeper sessions do not expire by a server wall clock"),
		"partition":      "Uc: Curator's session-expiry caveat; the late write is rejected by its zxid",
		"latency":        "S",
		"getset-race":    na("the race is GETSET's own"),
		"node-kill":      "S",
		"zk-leader-kill": "S",
	})
}
