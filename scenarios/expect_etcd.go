package scenarios

import (
	"maps"

	"github.com/lockchaos/lockchaos/faults"
)

// etcd: concurrency.Mutex in a session whose lease is ceil(TTL) = 1 s (algorithms/etcd.go), on a
// 3-member etcd cluster.
//
// Sources: Jepsen, "etcd 3.4.3" (Kingsbury, 2020-01-30, jepsen.io/analyses/etcd-3.4.3): etcd's
// locks are leases; a holder paused or partitioned past its lease TTL keeps believing it holds
// while the lock goes to another client, so "etcd locks are not safe" without fencing (the
// revision of the lock key as the token). The etcd docs (concurrency.Mutex, "Locks and leases")
// say the same since.
func init() {
	// The etcd family's variants: every lock on the etcd topology runs them — the built-in,
	// etcd-unlock-retry and etcd-unlock-retry-fenced (etcd #22082, docs/examples/etcd-22082.yaml),
	// tooz's etcd3gw lock, a user's. (They were keyed by the three built-ins' names; "etcd" being
	// the family's name too, every etcd lock had them already.)
	{
		const alg = "etcd" // the family (cluster's etcd topology)
		// The lease the server enforces outlives the catalogue's 900 ms pause: a lease of 1 s is
		// renewed every TTL/3 by the session's keepalive, and etcd revokes expired leases only every
		// 500 ms, so a silent holder loses its key 0.7–1.5 s after it fell silent. The pause and the
		// partition are sized as ZooKeeper's are against its session expiry. The pause then lasts
		// until another client holds (5 s at most), as the catalogue's does: "etcd" is the etcd
		// topology's family too, so this variant is every etcd lock's, and tooz's etcd3gw lock,
		// whose waiters poll once a second, was taken over only after a fixed 2 s pause had ended
		// (safe, 1 contended grant, its holder's late write into a free lock).
		vary("client-pause", alg, Variant{Faults: []faults.Spec{{Kind: "client-pause", Point: "cs:before-write",
			AtLeast: fixed(2000), Until: "cs:before-read", For: fixed(5000)}}})
		vary("partition", alg, Variant{
			Faults:   []faults.Spec{{Kind: "partition", Point: "cs:acquired", Clients: "trigger", For: fixed(2000)}},
			Workload: Workload{Hold: ms(2500), StuckAfter: ms(3500)},
		})
		// etcd speaks gRPC over HTTP/2, which lockchaos does not parse (docs/design.md#wire-points: not until
		// measured as cheap), so the wire faults of slow-release and latency cannot reach it: its
		// release is delayed by latency on its links from cs:before-release, and latency is timed on a
		// minority of the cluster, as for ZooKeeper.
		vary("slow-release", alg, Variant{Faults: []faults.Spec{{Kind: "slow-release", Point: "cs:before-release", Skip: 3,
			Amount: fixed(2*500 + 300), For: fixed(3 * 500)}}})
		vary("latency", alg, Variant{Faults: []faults.Spec{{Kind: "latency", At: ms(300), For: fixed(1500), Nodes: "minority", Amount: fixed(500/2 + 50)}}})
		vary("client-crash", alg, Variant{Faults: []faults.Spec{{Kind: "client-crash", Point: "cs:acquired"}}})
	}
	Expect("etcd", map[string]string{
		"baseline":     "S",
		"client-crash": "S: the crashed holder's lease expires (≈1–1.5 s)",
		"client-pause": "Uc: Jepsen etcd 3.4.3 — the paused holder's lease expires, it writes anyway",
		"clock-skew":   "S: leases are timed by the server, client clocks play no part",
		"slow-release": "S: the release deletes only a key with our create revision (etcd's gRPC is not parsed: the release is delayed by timed latency on its links, not at its command)",
		"failover":     na("etcd replicates by raft; there is no asynchronous failover (see node-kill, zk-leader-kill)"),
		"restart":      "S: the raft leader restarts with its data dir; the quorum keeps the lock",
		"clock-jump":   na("the fault shifts Redis key TTLs; etcd leases are timed by the leader's monotonic clock"),
		"partition":    "Uc: Jepsen etcd 3.4.3 — the cut-off holder's lease expires, it writes when its hold ends",
		"latency":      "S: a minority's latency, timed (etcd's gRPC is not parsed: no reply of it can be held on the wire)",
		"getset-race":  na("the race is GETSET's own"),
		"node-kill":    "S: the raft leader is killed for good, two of three keep a quorum",
		// The same fault on etcd's raft leader: a new leader keeps every committed key, but the
		// holder's release, proposed as the leader dies, fails at its 125 ms op timeout (this
		// release is not retried) and leaves the key; the holder's next Lock, a write in the
		// election, waits for etcd's own request timeout ("request timed out, possibly due to
		// previous leader failure": a bare clientv3 Put sent right after the kill waited out its 4 s deadline,
		// 3 of 3, on direct links without proxies too) until the acquire's 3 s timeout, and the
		// waiters wait on its key: no grant from the kill until ≈ 2 s after the heal. Stuck 10 of
		// 10 runs (it looked safe only while the scenario's 1 s acquire timeout cut the hung Lock
		// short). etcd-unlock-retry,
		// whose release is retried until it lands, was live and safe 4 of 4.
		"zk-leader-kill": "X: the leader's death hangs the holder's release and its next Lock in etcd's request timeout; its key blocks the waiters ≈ 2 s past the heal",
	})
}

// vary adds an algorithm's (or family's) variant to a catalogue scenario, from the file that adds
// the algorithm's expectations. Call it from init, before Expect; it panics on an unknown scenario
// or an invalid fault (a programming error).
func vary(scenario, key string, v Variant) {
	s, ok := catalogue[scenario]
	if !ok {
		panic("scenarios: variant for unknown scenario " + scenario)
	}
	vs := make(map[string]Variant, len(s.Variants)+1)
	for k, old := range s.Variants {
		vs[k] = old
	}
	vs[key] = v
	s.Variants = vs
	if err := s.Validate(); err != nil {
		panic(err)
	}
	catalogue[scenario] = s
}

// etcd-unlock-retry and etcd-unlock-retry-fenced: etcd's Mutex released by its own Unlock, a
// failed Unlock retried by the same Mutex every 500 ms (algorithms/etcd.go; docs/examples/
// etcd-22082.yaml is where they differ: etcd-io/etcd #22082). Measured with seed 1 in the
// catalogue; the cells left out: etcd-unlock-retry-fenced × latency unsafe (a client granted at
// the latency's heal, its key gone by its release and another client granted 90 ms later — no
// Unlock of it had failed; etcd × latency does the same: unsafe in 2 of 9 runs on 0293046, seeds 1
// and 8, against its expected S), and etcd-unlock-retry × zk-leader-kill stuck. The latency's
// mechanism, read in clientv3 v3.5 lease.go: a keepalive reply sets the next send TTL/3 later
// on a 500 ms tick, and deadlineLoop (every 1 s) gives up a lease whose reply is later than TTL
// after the last — 300 ms on the replies makes that gap 0.63–1.13 s against a 1 s lease, so a
// client of the slow member may stop renewing; its lease expires while it holds, after its
// validity check and before its write (seed 8: granted at 2.04 s, key gone, client 2 granted at
// 2.12 s, both wrote). Real, but by chance in a timed cell: aiming it needs the expiry inside the
// holder's check-to-write gap, which a latency does not stretch (a 1.5 s latency from the grant with
// a 2.5 s hold was safe 3 of 3 — the holder saw its key gone). Left for a scenario of its own.
func init() {
	common := map[string]string{
		"baseline":     "S",
		"client-crash": "S: the crashed holder's lease expires",
		"client-pause": "Uc: Jepsen etcd 3.4.3 — the paused holder's lease expires, it writes anyway",
		"clock-skew":   "S: leases are timed by the server",
		"slow-release": "S: the delayed release's Unlock succeeds late; nothing was retried",
		"failover":     na("etcd replicates by raft; there is no asynchronous failover"),
		"restart":      "S: the raft leader restarts with its data dir; the quorum keeps the lock",
		"clock-jump":   na("the fault shifts Redis key TTLs; etcd leases are timed by the leader's monotonic clock"),
		"partition":    "Uc: Jepsen etcd 3.4.3 — the cut-off holder's lease expires, it writes when its hold ends",
		"getset-race":  na("the race is GETSET's own"),
		"node-kill":    "S: the raft leader is killed for good, two of three keep a quorum",
	}
	unfenced := maps.Clone(common)
	unfenced["latency"] = "S: a minority's latency, timed"
	Expect("etcd-unlock-retry", unfenced)
	fenced := maps.Clone(common)
	fenced["zk-leader-kill"] = "S: the raft leader restarts 1 s later; committed keys survive"
	Expect("etcd-unlock-retry-fenced", fenced)
}
