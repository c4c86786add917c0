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
