package scenarios

// bsm-redislock: github.com/bsm/redislock v0.9.4 (algorithms/bsm_redislock.go): Obtain (SET NX
// PX in Lua) retried with LinearBackoff, Release (Lua compare-and-delete), and a careful holder
// that asks lock.TTL before it writes, as the README does. It runs on redis-single, and on
// redis-sentinel for failover, with the "redis" family's variants, as token does.
//
// Measured with `lockchaos run --algorithm bsm-redislock --scenario S --seed N` on the local
// backend, seeds 1–3 of each cell:
// every cell as below in 3 of 3; TTD of the unsafe cells: client-pause 541–550 ms, failover
// 2.16–2.43 s, restart 136–528 ms, clock-jump 34–197 ms; node-kill stuck from 1.02–1.13 s.
// In restart and clock-jump the holder's TTL check finds the key gone and it skips its write
// (0 overlapping holders): the illegal grant is the service's, the careful holder does no harm.
//
// Sources: Kleppmann, "How to do distributed locking" (2016): a paused holder writes after its
// lease; bsm/redislock issue #93 ("a stale lock holder — one paused past its TTL, or partitioned
// — cannot corrupt state" with a fencing token), closed by PR #94 (2026-06-25, Options.FenceKey),
// which no release on the module proxy has yet: v0.9.4 gives no fence, so client-pause is Uc.
// The Redis distlock page and seed 003's master/slave table: one master (failover, restart).
//
// bsm-redislock-refresh is the same lock kept alive by lock.Refresh every TTL/3 from a goroutine;
// its holder gives the lease up at the first Refresh that fails, and trusts its loop between
// two Refreshes. Measured the same way, seeds 1–3, every cell as below in 3 of 3; TTD:
// client-pause 544–739 ms, failover 2.11–2.22 s, restart 91 ms–1.13 s, clock-jump 32–54 ms. Unlike
// the plain form, whose holder asks the server (TTL) before it writes, its holder wrote into the
// next holder's lock after a restart in 2 of 3 runs and after a clock jump in 1 of 3 (its loop had
// not yet refreshed and failed): the same illegal grant, with an overlapping write.
func init() {
	Expect("bsm-redislock", map[string]string{
		"baseline":       "S",
		"client-crash":   "S: the crashed holder's key expires",
		"client-pause":   "Uc: Kleppmann's GC pause — the paused holder writes after its key expired (bsm/redislock #93: no fence in v0.9.4)",
		"clock-skew":     "S: the lease is the server's PX expiry and the holder's TTL check; client clocks only time intervals",
		"slow-release":   "S: Release is a Lua compare-and-delete of our token",
		"failover":       "Us: the promoted replica never saw the key",
		"restart":        "Us: the restarted master forgot the key (the holder's TTL check sees it gone and skips its write)",
		"clock-jump":     "Us: the jump expires the key while its lease runs (the holder's TTL check sees it gone)",
		"partition":      "S: the cut-off holder, busy past its TTL, finds its validity (TTL from the call) gone and skips its write",
		"latency":        "S: a late winning reply leaves no validity counted from the call",
		"getset-race":    na("the race is GETSET's own"),
		"node-kill":      "X: the only master is gone",
		"zk-leader-kill": na("a ZooKeeper scenario"),
	})
	Expect("bsm-redislock-refresh", map[string]string{
		"baseline":       "S",
		"client-crash":   "S: the crashed holder's refreshes stop and its key expires",
		"client-pause":   "Uc: Kleppmann's GC pause — the paused holder writes after its key expired (bsm/redislock #93: no fence in v0.9.4)",
		"clock-skew":     "S: the key's expiry is the server's PX; the holder times its loop by intervals of its own clock",
		"slow-release":   "S: Release is a Lua compare-and-delete of our token",
		"failover":       "Us: the promoted replica never saw the key",
		"restart":        "Us: the restarted master forgot the key; the holder trusts its last Refresh until the next one fails",
		"clock-jump":     "Us: the jump expires the key between two Refreshes",
		"partition":      "S: the first Refresh under the partition fails and the holder gives its lease up",
		"latency":        "S: the lease is counted from the Obtain call, so a late winning reply leaves none",
		"getset-race":    na("the race is GETSET's own"),
		"node-kill":      "X: the only master is gone",
		"zk-leader-kill": na("a ZooKeeper scenario"),
	})
}
