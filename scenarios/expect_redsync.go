package scenarios

// redsync: github.com/go-redsync/redsync/v4 with its default options (algorithms/redsync.go). It
// is Redlock, and in the "redlock" family (Family), so it runs Redlock's variants: five
// independent masters, the bare-majority setup for restart and clock-jump, latency on a minority.
//
// Sources: Kleppmann, "How to do distributed locking" (2016): Redlock's safety rests on timing —
// a process pause longer than the lease (client-pause), a node that restarts without fsync or
// jumps its clock (restart, clock-jump) each let two clients hold the lock. go-redsync/redsync
// issue #72 ("Potential bug of ValidContext/Valid", 2021): only Until bounds the lease, which is
// what the careful client checks here; PR #149 (WithSetNXOnExtend, off by default) exists because
// a restarted Redis forgets the lock.
func init() {
	// In the bare-majority setup client 1 must win redis-3 between two holders of clients 2–5,
	// which re-acquire within the think time (≤ 5 ms). redsync's default retry delay (random
	// 50–250 ms) makes client 1 try rarely, so the fault (at client 1's cs:acquired) often never
	// fires within the catalogue's 2 s; and each of the others' tries waits out redsync's per-try
	// timeout on the two nodes it cannot reach, so the next grant often comes only after client 1's
	// 200 ms hold. A longer fault phase and a hold of 400 ms (still inside redsync's validity,
	// 500 ms − elapsed − 1%) give both the time.
	for _, s := range []string{"restart", "clock-jump"} {
		vary(s, "redsync", Variant{Workload: Workload{Duration: ms(8000), Hold: ms(400)}})
	}
	Expect("redsync", map[string]string{
		"baseline":       "S",
		"client-crash":   "S: the crashed holder's keys expire",
		"client-pause":   "Uc: Kleppmann's GC pause; Until does not help a client that is stopped",
		"clock-skew":     "S: redsync times its validity with time.Now, and the servers' expiry by their own clocks",
		"slow-release":   "S: the release script deletes only our token",
		"failover":       na("Redlock uses independent masters, no replication to fail over"),
		"restart":        "Us: Kleppmann — a node of the bare majority restarts empty (redsync issue/PR #149)",
		"clock-jump":     "Us: Kleppmann — a node of the bare majority jumps its clock",
		"partition":      "S: the careful client's Until check stops the cut-off holder's late write",
		"latency":        "S: a slow minority is outvoted; redsync's 5% per-try timeout drops it",
		"getset-race":    na("the race is GETSET's own"),
		"node-kill":      "S: four of five masters keep a majority",
		"zk-leader-kill": na("a ZooKeeper scenario"),
	})
}

// redsync-valid and redsync-valid-until: redsync whose holder checks Mutex.Valid() before it
// writes, alone or followed by Until (algorithms/redsync.go; docs/examples/redsync-72.yaml is
// where they differ: go-redsync/redsync #72). In the catalogue they behave as redsync: measured
// with seed 1, each cell as redsync's (restart and clock-jump without redsync's longer variant,
// unsafe all the same). Under partition Valid's GETs time out, so both skip the late write.
func init() {
	for _, alg := range []string{"redsync-valid", "redsync-valid-until"} {
		Expect(alg, map[string]string{
			"baseline":       "S",
			"client-crash":   "S: the crashed holder's keys expire",
			"client-pause":   "Uc: Kleppmann's GC pause; no check helps a client that is stopped after it",
			"clock-skew":     "S",
			"slow-release":   "S: the release script deletes only our token",
			"failover":       na("Redlock uses independent masters, no replication to fail over"),
			"restart":        "Us: Kleppmann — a node of the bare majority restarts empty",
			"clock-jump":     "Us: Kleppmann — a node of the bare majority jumps its clock",
			"partition":      "S: Valid's GETs to the cut-off masters time out, so the holder skips its late write",
			"latency":        "S: a slow minority is outvoted",
			"getset-race":    na("the race is GETSET's own"),
			"node-kill":      "S: four of five masters keep a majority",
			"zk-leader-kill": na("a ZooKeeper scenario"),
		})
	}
}
