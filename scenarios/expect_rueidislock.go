package scenarios

// rueidislock: github.com/redis/rueidis v1.0.79's rueidislock with its defaults
// (algorithms/rueidislock.go): a majority of 3 keys on one Redis, SET NX PXAT, extended every
// TTL/2, client-side caching on; the careful holder trusts the context WithContext returned
// until the library cancels it. It runs on redis-single, and on redis-sentinel for failover,
// with the "redis" family's variants.
//
// Measured with `lockchaos run --algorithm rueidislock --scenario S --seed N` on the local
// backend, seeds 1–3 of each cell;
// every cell as below in 3 of 3 (client-pause 6 of 6, partition 11 of 11; restart, clock-jump
// and latency measured twice, 6 of 6; node-kill 4 of 4 after a dial that never connected counted as a
// definite failure, 2 of 3 stuck and 1 unknown before). TTD of the unsafe cells: client-pause
// 601–766 ms, failover 4.09–4.45 s, restart 224 ms–1.15 s, clock-jump 54–314 ms.
//
// partition is safe, with little room: the extend sent at TTL/2 waits for its reply until the
// expiry it asks for (1.5×TTL after the grant) and only then does the library cancel the
// context — after the keys expired at TTL, before the catalogue's holder checks at TTL+300 ms.
// A holder that checks at TTL+100 ms writes into the next holder's lock:
// docs/examples/rueidislock-partition.yaml, unsafe (client class) in 6 of 6 runs (seeds 1–6,
// TTD 581–601 ms; the write 121–130 ms after the keys expired), where token+watchdog and
// bsm-redislock-refresh, which give a lease up at the first renewal that is not answered within
// a request timeout, are safe (3 of 3 each). A finding against the README's "canceled
// automatically and immediately once the KeyMajority is not held anymore" (lock.go: an extend's
// request deadline is the new expiry it asks for, time.Now()+KeyValidity).
//
// Sources: Kleppmann, "How to do distributed locking" (2016); the rueidislock README; seed 003's
// master/slave table (one master: failover, restart).
func init() {
	Expect("rueidislock", map[string]string{
		"baseline":       "S",
		"client-crash":   "S: the crashed holder's extends stop and its keys expire",
		"client-pause":   "Uc: Kleppmann's GC pause — the paused holder, past its check, writes after its keys expired",
		"clock-skew":     na("rueidislock's PXAT expiries are the client's wall clock (time.Now), which the fault (the harness's Config.Clock) cannot reach; a client clock behind the server's would set expiries already past"),
		"slow-release":   "S: the release is a Lua compare-and-delete of our token on each key",
		"failover":       "Us: the promoted replica never saw the keys",
		"restart":        "Us: the restarted master forgot the keys (the library cancels the holder's context: it does not write)",
		"clock-jump":     "Us: the jump expires the keys while their lease runs",
		"partition":      "S: the extend under the partition times out at 1.5×TTL and the library cancels the context before the holder checks at TTL+300 ms (at TTL+100 ms it writes: docs/examples/rueidislock-partition.yaml)",
		"latency":        "S: a held winning reply outlasts TryNextAfter (20 ms): that key counts as failed and is deleted",
		"getset-race":    na("the race is GETSET's own"),
		"node-kill":      "X: the only master is gone",
		"zk-leader-kill": na("a ZooKeeper scenario"),
	})
}
