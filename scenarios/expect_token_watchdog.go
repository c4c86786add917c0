package scenarios

// token+watchdog: the token lock renewed every TTL/3 by a watchdog, as Redisson's RLock without a
// lease time (algorithms/token_watchdog.go). Its lease has no fixed validity: the careful client
// asks the watchdog (algorithms.Validator) before it writes, and the watchdog gives the lease up
// at its first failed renewal. Measured with `lockchaos run --algorithm token+watchdog --scenario
// S --seed 1` on the local backend; the partition variant is in catches.go.
//
// client-pause is Uc: in this harness the paused client's watchdog goroutine keeps running, but a
// pause silences the client's links, so its renewals fail and the key expires; the paused holder,
// already past its check, writes late. (In a real process pause the watchdog freezes too: the
// same outcome.) clock-jump is Us: the jump expires the key between two renewals, and the holder,
// whose last renewal is less than a TTL old by its own clock, still believes it.
//
// Sources: Redisson wiki, "8.1. Lock" (lockWatchdogTimeout, 30 s by default, renewed every
// third of it); Kleppmann, "How to do distributed locking": renewal does not help a holder that is
// stopped, nor a store that forgets.
func init() {
	Expect("token+watchdog", map[string]string{
		"baseline":       "S",
		"client-crash":   "S: the dead holder's renewals stop and its key expires",
		"client-pause":   "Uc: the paused holder's renewals fail, its key expires, it writes after the pause",
		"clock-skew":     "S: renewals are timed by intervals of the client's clock",
		"slow-release":   "S: compare-and-delete",
		"failover":       "Us: the promoted replica never saw the key",
		"restart":        "Us: the restarted master forgets the key",
		"clock-jump":     "Us: the key expires between two renewals while the holder trusts the last one",
		"partition":      "S: the first failed renewal makes the holder give the lease up",
		"latency":        "S",
		"getset-race":    na("the race is GETSET's own"),
		"node-kill":      "X: the only master is gone",
		"zk-leader-kill": na("a ZooKeeper scenario"),
	})
}
