package scenarios

import "github.com/lockchaos/lockchaos/faults"

// zk-lock: github.com/go-zookeeper/zk v1.0.4's own zk.NewLock recipe (algorithms/zk_lock.go), on
// the ZooKeeper topology with the "zookeeper" family's variants but one. The recipe never tells
// its holder the lock was lost (samuel/go-zookeeper #20, "Is there a way to tell if a previously
// acquired lock has been lost?", open since 2014), so its holder has nothing to check: Validity
// 0, no Validator.
//
// partition is pinned to the schedule that tells zk.NewLock apart from a recipe with a session
// listener, as zookeeper-ignore-session's cell is (catches.go): the holder is cut off for 1.3 s,
// past its 1 s session, and holds 1.7 s, so it reconnects — and its client is told the session
// expired — before it writes. The zookeeper algorithm (the same recipe plus Valid, Curator's
// LOST) then skips its write: safe, 3 of 3 (catches.go). zk.NewLock's holder writes: #20.
//
// Measured with `lockchaos run --algorithm zk-lock --scenario S --seed N` on the local backend,
// seeds 1–3 of each cell, every cell
// as below in 3 of 3 (partition 6 of 6, TTD 1.30–2.10 s; client-pause TTD 1.40–1.64 s; the
// stuck cells from 1.1–1.25 s for node-kill and 2.84–2.94 s for slow-release).
//
// Two cells are findings of lockchaos against the recipe, stuck where the zookeeper algorithm
// (the same recipe with a background delete of an abandoned node) is safe: an Unlock that
// loses its connection — a held delete in slow-release, the killed leader's connection in
// node-kill — returns "zk: connection closed" and leaves the node, which the recipe never
// deletes again (Unlock keeps lockPath, so only a caller that retries Unlock until it succeeds
// frees it; `defer lock.Unlock()` does not), and go-zookeeper's session, reconnected within
// its timeout, keeps it alive: every waiter is stuck for as long as the holder's process lives.
// samuel/go-zookeeper #229 (open since 2020; PR #237 unmerged) reports the same mechanism for
// Lock: a create whose reply is lost leaves a node that blocks everyone.
//
// Sources: samuel/go-zookeeper #20 and #229; Curator's session-expiry caveat (CURATOR-206).
func init() {
	vary("partition", "zk-lock", Variant{
		Faults:   []faults.Spec{{Kind: "partition", Point: "cs:acquired", Clients: "trigger", For: fixed(2*ttl + 300)}},
		Workload: Workload{Hold: ms(2*ttl + 700), AcquireTimeout: ms(4000), StuckAfter: ms(2500), Tail: ms(1000)},
	})
	Expect("zk-lock", map[string]string{
		"baseline":       "S",
		"client-crash":   "S: the crashed holder's session expires and takes its node",
		"client-pause":   "Uc: the paused holder's session expires; it is never told, and writes (samuel/go-zookeeper #20)",
		"clock-skew":     "S: sessions are timed by the servers; client clocks play no part",
		"slow-release":   "X: samuel/go-zookeeper #229's mechanism — the held delete outlasts go-zookeeper's read timeout (2/3 of the session), Unlock fails with the connection, the recipe never deletes its node again, and the reconnected session keeps it: stuck for as long as the holder lives",
		"failover":       na("ZooKeeper has no asynchronous failover; see zk-leader-kill"),
		"restart":        "S: one of three restarts, the quorum keeps the lock",
		"clock-jump":     na("ZooKeeper sessions do not expire by a server wall clock"),
		"partition":      "Uc: samuel/go-zookeeper #20 — the cut-off holder's session expires; it reconnects, its client is told, the recipe is not, and it writes",
		"latency":        "S: a slow minority of the ensemble",
		"getset-race":    na("the race is GETSET's own"),
		"node-kill":      "X: samuel/go-zookeeper #229's mechanism — the holder's Unlock fails with the killed server's connection (\"zk: connection closed\", 3 of 3), the recipe never deletes its node again, and its session, moved to a live server, keeps it: stuck for as long as that client lives",
		"zk-leader-kill": "S: a new leader keeps every committed lock node",
	})
}
