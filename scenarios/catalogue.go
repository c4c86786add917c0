package scenarios

import (
	"fmt"

	"github.com/lockchaos/lockchaos/faults"
)

// The catalogue (DESIGN.md §7). Every fault is aimed by an event — the first holder, at the named
// point where the published failure happens — so each known bug shows within seconds, not after
// minutes of random hope. TTLs are short (500 ms) for the same reason; the faults are sized from
// them (a pause of TTL+δ, a jump of ≥ TTL).

const ttl = 500 // ms, the catalogue's lease

// ZooKeeper's session timeout is 1 s: shorter sessions expire spuriously on a loaded 2-core machine.
var std = Workload{Clients: 5, TTL: ms(ttl), Hold: ms(10), Duration: ms(2000), SessionTimeout: ms(1000)}

// BareMajority is the Redlock setup of Kleppmann's restart and clock-jump failures over five
// masters: client 1 reaches only redis-1..3 and the other clients only redis-3..5, so every
// majority goes through redis-3. When client 1 reaches hit's point (cs:acquired when unset), the
// fault hits redis-3 and the next client wins redis-3..5. A fault on one node of a full majority of
// five would not matter.
func BareMajority(hit faults.Spec, clients int) []faults.Spec {
	if hit.Point == "" {
		hit.Point = "cs:acquired"
	}
	hit.Client, hit.Nodes = 1, "redis-3"
	others := "2"
	if clients > 2 {
		others = fmt.Sprintf("2-%d", clients)
	}
	return []faults.Spec{
		{Kind: "partition", Clients: "1", Nodes: "redis-4,redis-5", Setup: true},
		{Kind: "partition", Clients: others, Nodes: "redis-1,redis-2", Setup: true},
		hit,
	}
}

// The catalogue is registered during package-variable initialization, before any init function,
// so files that add expectations (Expect) from their init may have any name.
var _ = registerCatalogue()

func registerCatalogue() bool {
	register(Scenario{
		Name:     "baseline",
		Summary:  "No faults: every algorithm must be safe and live.",
		Workload: std,
		Expect:   all("S"),
	})
	register(Scenario{
		Name:       "client-crash",
		Summary:    "The first holder crashes right after acquiring (setnx-expire: between SETNX and EXPIRE) and never releases.",
		Reproduces: "seed 002 problem 1: a lock without expiry is never deleted when its holder dies",
		Needs:      "a crash at cs:acquired (acquire:after-setnx for setnx-expire)",
		Workload:   std.merge(Workload{StuckAfter: ms(1500)}),
		Faults:     []faults.Spec{{Kind: "client-crash", Point: "cs:acquired"}},
		Variants: map[string]Variant{
			"setnx-expire": {Faults: []faults.Spec{{Kind: "client-crash", Point: "acquire:after-setnx"}}},
		},
		Expect: expect("X", "X", "S", "S", "S", "S", "S"),
	})
	register(Scenario{
		Name: "client-pause",
		Summary: "The holder pauses (a GC pause, SIGSTOP) after its validity check and before its write, " +
			"for longer than the TTL (ZooKeeper: the session timeout); its links are silent meanwhile.",
		Reproduces: "Kleppmann, How to do distributed locking (the GC pause); Jepsen etcd 3.4.3",
		Needs:      "pause > TTL (or session timeout) at cs:before-write",
		Workload:   std,
		Faults:     []faults.Spec{{Kind: "client-pause", Point: "cs:before-write", For: ms(ttl + 400)}},
		Variants: map[string]Variant{
			// The server notices a silent session only after the timeout plus up to a tick.
			"zookeeper": {Faults: []faults.Spec{{Kind: "client-pause", Point: "cs:before-write", For: ms(2000)}}},
			// getset: at the thirteenth write, in the steady state, for 3×TTL. Paused at the first,
			// the holder's lease is taken over by a waiter whose first acquire, called at 0,
			// returns past its own validity and is never used, so nobody held when the late
			// write landed (2 of 5 matrices at --parallel 4 came out safe; at the fourth write 7
			// of 8 seeds were caught, at the thirteenth 10 of 10). The first grant after the
			// expiry still goes to a waiter that has waited since the pause began, and is unused;
			// when a losing GETSET overwrote the key meanwhile (getset-race's flaw) its release
			// finds another value and the key stands one more TTL, unheld: with a pause of
			// TTL+400 ms the late write then fell in that gap (2 of 20 runs of make reproduce).
			// 3×TTL outlasts it, and a waiter that called after the first timeouts holds.
			"getset": {Faults: []faults.Spec{{Kind: "client-pause", Point: "cs:before-write", Skip: 12, For: ms(3 * ttl)}}},
		},
		Expect: expect("S: others wait, the lock never expires", "Uc", "Uc", "Uc", "Uc", "Uc", "Uc"),
	})
	register(Scenario{
		Name:       "clock-skew",
		Summary:    "Client 2's clock runs 1.5 s (3×TTL) ahead of the others from the start.",
		Reproduces: "seed 000 时间戳的问题: a timestamp lock needs the clients' clocks to agree",
		Needs:      "offset > TTL on a client that waits while another holds",
		Workload:   std,
		Faults:     []faults.Spec{{Kind: "clock-skew", Clients: "2", Amount: ms(3 * ttl)}},
		Expect:     expect("S", "S", "S", "Us", "S", "S", "S"),
	})
	register(Scenario{
		Name: "slow-release",
		Summary: "The holder's release reaches the server late: its DEL is delayed past the TTL " +
			"(getset: the holder pauses between its GET and its DEL).",
		Reproduces: "seed 003 table: a late DEL removes another client's lock",
		Needs:      "release delay > TTL, and a holder in place when the late DEL lands",
		// A hold of 150 ms keeps the lock held almost all the time, so the late DEL nearly always
		// finds another holder's key to remove (with 10 ms holds it often fell into a gap).
		Workload: std.merge(Workload{Hold: ms(150)}),
		Faults: []faults.Spec{{Kind: "slow-release", Point: "cs:before-release", Amount: ms(ttl + 300),
			For: ms(2 * ttl)}},
		Variants: map[string]Variant{
			// At the fourth release, in the steady state (as client-pause's getset variant), for
			// TTL−75 ms: the holder's key expires 350 ms after its GET, a waiter takes it over and
			// holds 150 ms, and the DEL lands in the middle of that hold (as latency's getset
			// variant). Acquires time out after 300 ms, so every grant comes to an acquire called
			// less than TTL−hold ago and its holder holds; the release's timeout is 3 s, to outlast
			// the pause (a client woken past it finds its context ended and gives the DEL up).
			// Before: a pause of 2×TTL+300 ms and acquires of 3 s, the DEL meant for a later
			// holder's hold — it found none in 1 of 5 matrices at --parallel 4 (both takeover
			// winners had waited longer than the lease and gave the lock back unused, and losing
			// GETSETs left keys nobody held).
			"getset": {Faults: []faults.Spec{{Kind: "client-pause", Point: "release:after-get", Skip: 3, For: ms(ttl - 75)}},
				Workload: Workload{AcquireTimeout: ms(300), ReleaseTimeout: ms(3000)}},
		},
		Expect: expect("S: no expiry, the DEL is the holder's own", "Us", "Us", "Us", "S", "S", "S"),
	})
	register(Scenario{
		Name: "failover",
		Summary: "redis-sentinel: replication is cut from the start, the first holder's lock lands on the " +
			"master only, the master is killed and Sentinel promotes the replica, which never saw the lock.",
		Reproduces: "seed 003 master/slave table; the Redis distlock page (why Redlock exists)",
		Needs:      "hold longer than Sentinel's failover (≈2 s), TTL longer than the hold",
		Workload:   Workload{Clients: 3, TTL: ms(10000), Hold: ms(4000), Duration: ms(5000), Tail: ms(500), OpTimeout: ms(300)},
		Faults:     []faults.Spec{{Kind: "failover", Point: "cs:acquired", Nodes: "master"}},
		Variants:   map[string]Variant{"redis": {Topology: "redis-sentinel"}},
		Expect: expect("Us", "Us", "Us", "Us", "Us",
			"-: Redlock uses independent masters, no replication to fail over",
			"-: ZooKeeper has no asynchronous failover; see zk-leader-kill"),
	})
	register(Scenario{
		Name: "restart",
		Summary: "The node holding the lock restarts empty (no persistence) while the lock is held. " +
			"Redlock: client 1 holds on exactly redis-1..3, redis-3 restarts, the next client wins redis-3..5.",
		Reproduces: "Kleppmann: Redlock with a node restarted without fsync",
		Needs:      "a restart while the lock is held, before its TTL",
		// The restart runs at the holder's point (the holder waits for it) and takes 1.7–2.2 s on
		// the docker backend of a 2-core machine (a fresh container, then ready): the lease (4 s)
		// outlasts it, so the holder still works under a valid lease when the next client is
		// granted. With 2 s, token × restart on docker was safe in 4 of 4 runs here: its lease had
		// run out when the server came back.
		Workload: std.merge(Workload{TTL: ms(4000), Hold: ms(700), StuckAfter: ms(1500), Tail: ms(1000)}),
		Faults:   []faults.Spec{{Kind: "restart", Point: "cs:acquired", Nodes: "master"}},
		Variants: map[string]Variant{
			// Two clients, so client 1 (the one the fault waits for) soon wins the contested
			// redis-3; its hold outlasts client 2's next attempts (each waits out its black-holed
			// nodes, TTL/10), and the 2 s lease keeps its grant valid when client 2 wins redis-3..5
			// (a restart on the local backend takes milliseconds).
			"redlock": {Faults: BareMajority(faults.Spec{Kind: "restart"}, 2),
				Workload: Workload{Clients: 2, Duration: ms(3000), TTL: ms(2000)}},
			// The ZooKeeper family keeps the 2 s of its measurements: its lease is the session.
			"zookeeper": {Faults: []faults.Spec{{Kind: "restart", Point: "cs:acquired", Nodes: "leader"}},
				Workload: Workload{TTL: ms(2000)}},
		},
		Expect: expect("Us", "Us", "Us", "Us", "Us", "Us", "S: one of three restarts, the quorum keeps the lock"),
	})
	register(Scenario{
		Name: "clock-jump",
		Summary: "The wall clock of the node holding the key jumps forward by the TTL while the lock is " +
			"held (emulated: every key's TTL shifts down by the jump). Redlock: the same bare-majority setup as restart.",
		Reproduces: "Kleppmann: Redlock and a server clock jump",
		Needs:      "jump ≥ TTL while the lock is held",
		Workload:   std.merge(Workload{Hold: ms(200)}),
		Faults:     []faults.Spec{{Kind: "clock-jump", Point: "cs:acquired", Nodes: "master", Amount: ms(ttl)}},
		Variants: map[string]Variant{
			"redlock": {Faults: BareMajority(faults.Spec{Kind: "clock-jump", Amount: ms(ttl)}, 2),
				Workload: Workload{Clients: 2}},
		},
		Expect: expect("S: the key has no TTL", "Us", "Us", "S: the expiry is in the value, read by client clocks", "Us", "Us",
			"-: ZooKeeper sessions do not expire by a server wall clock"),
	})
	register(Scenario{
		Name: "partition",
		Summary: "The holder is cut off from the lock service (not from the resource) for longer than the " +
			"TTL / session timeout, right after it acquired; it keeps working and writes under the partition " +
			"while it believes its lease. ZooKeeper: it writes while still cut off, after the ensemble expired " +
			"its session, which it cannot know yet.",
		Reproduces: "Curator's session-expiry caveat (CURATOR-206); Jepsen",
		Needs:      "partition > TTL (session timeout) at cs:acquired; a write under the partition",
		// The holder writes within its own validity (hold 10 ms of a 500 ms lease) while its links to
		// the service are black holes: a lease lock must let the others in after the TTL and the
		// holder must stop by its own clock, so a lock that trusts a lease it cannot renew is caught
		// (DESIGN.md §11). Its release is lost in the partition (toxiproxy drops the bytes).
		Workload: std.merge(Workload{AcquireTimeout: ms(4000), StuckAfter: ms(1500)}),
		Faults:   []faults.Spec{{Kind: "partition", Point: "cs:acquired", Clients: "trigger", For: ms(2*ttl + 300)}},
		Variants: map[string]Variant{
			// A ZooKeeper lock has no validity of its own: the holder believes it until its client
			// is told the session expired (the recipe's Valid, Curator's LOST). The caveat is a
			// holder that writes while still cut off, after the ensemble expired its session (1 s
			// and a tick): partition 2.3 s, write at 1.6 s. One that writes after the heal has been
			// told, and skips its write (zookeeper-ignore-session's cell, scenarios/catches.go).
			"zookeeper": {Faults: []faults.Spec{{Kind: "partition", Point: "cs:acquired", Clients: "trigger", For: ms(2300)}},
				Workload: Workload{Hold: ms(1600), AcquireTimeout: ms(4000), StuckAfter: ms(3000), Tail: ms(1000)}},
		},
		// setnx: the holder's DEL is lost in the partition and the key has no TTL, so nobody is
		// granted again — stuck, where DESIGN.md §7's first table (written when the hold outlived
		// the partition) said S.
		Expect: expect("X: the lost DEL leaves a key without TTL", "S", "S", "S", "S", "S", "Uc"),
	})
	register(Scenario{
		Name:       "latency",
		Summary:    "From 300 ms on, replies from a minority of nodes (the single node) are delayed by TTL/2+50 ms. getset: the holder's release replies are delayed past its TTL.",
		Reproduces: "antirez: Redlock's validity check rejects slow acquisitions; getset: a late GET reply lets its DEL remove a new holder's key",
		Needs:      "latency > TTL/2 on a minority; getset: reply latency > TTL from cs:before-release",
		Workload:   std.merge(Workload{OpTimeout: ms(2 * ttl)}),
		Faults:     []faults.Spec{{Kind: "latency", At: ms(300), For: ms(1500), Nodes: "all", Amount: ms(ttl/2 + 50)}},
		Variants: map[string]Variant{
			"redlock": {Faults: []faults.Spec{{Kind: "latency", At: ms(300), For: ms(1500), Nodes: "minority", Amount: ms(ttl/2 + 50)}},
				Workload: Workload{OpTimeout: ms(ttl / 10)}},
			"zookeeper": {Faults: []faults.Spec{{Kind: "latency", At: ms(300), For: ms(1500), Nodes: "minority", Amount: ms(ttl/2 + 50)}}},
			// getset's race under latency, forced at its point so the cell is deterministic
			// (DESIGN.md §10): the server answers the release GET at once but the reply reaches
			// the holder after its lease ended; meanwhile a waiter's GETSET took the lock over,
			// and the holder's DEL, sent on its stale GET, removes the new holder's key while
			// that one still holds it, so a third client is granted the lock during its lease.
			// The timing, with holds of 150 ms: the trigger's key expires 350 ms after its
			// release began, a waiter takes it over then and holds 150 ms, and the DEL lands at
			// TTL−75 = 425 ms, in the middle of that hold. Acquires time out after 300 ms, so
			// every grant comes to an acquire called less than TTL−hold ago and its holder holds
			// (a waiter that had waited longer took the lock and gave it back at once, unused,
			// and a losing GETSET then left a key nobody held for the DEL to remove: 1 miss in 6
			// matrices at --parallel 4, when the DEL came at TTL+100 and had to find a second
			// waiter's hold). It fires at the fourth release (Skip 3), in the steady state. The
			// release's own timeout (3 s) outlasts the late reply, so the release is not past its
			// deadline when it sends the DEL.
			"getset": {Faults: []faults.Spec{{Kind: "latency", Point: "cs:before-release", Skip: 3, Clients: "trigger", Nodes: "all",
				Amount: ms(ttl - 75), For: ms(ttl + 300), Stream: "downstream"}},
				Workload: Workload{Hold: ms(150), AcquireTimeout: ms(300), ReleaseTimeout: ms(3000)}},
		},
		Expect: expect("S", "S", "S", "Us: a late GET reply lets its DEL remove a new holder's key", "S", "S", "S"),
	})
	register(Scenario{
		Name:       "getset-race",
		Summary:    "20 clients; the first holder crashes, and the waiters all find its expired timestamp at once.",
		Reproduces: "seed 000: GETSET lets exactly one of the racing waiters win",
		Workload:   std.merge(Workload{Clients: 20}),
		Faults:     []faults.Spec{{Kind: "client-crash", Point: "cs:acquired"}},
		Expect: map[string]string{
			// DESIGN.md §7 said S. With the race forced at its point (scenarios/catches.go: two
			// waiters that found the timestamp expired stop before their GETSET), exactly one
			// waiter wins, as the seed says — but a losing GETSET still overwrites the key with
			// its own, earlier expiry, so a later waiter takes the lock over while the holder's
			// lease runs: unsafe (service class). The stop's length decides how often that shows
			// (see catches.go and BENCHMARKS.md "Detection speed").
			"getset": "Us: losing GETSETs set the winner's expiry back", "setnx": na("the race is GETSET's own"), "setnx-expire": na("the race is GETSET's own"),
			"setnx-px": na("the race is GETSET's own"), "token": na("the race is GETSET's own"),
			"redlock": na("the race is GETSET's own"), "zookeeper": na("the race is GETSET's own"),
		},
	})
	register(Scenario{
		Name:       "node-kill",
		Summary:    "One node is killed for good at 500 ms (ZooKeeper: the leader of 3; Redlock: one of 5).",
		Reproduces: "seed 001 高可用: a lock on one node is only as available as that node",
		Workload:   std.merge(Workload{StuckAfter: ms(1500)}),
		Faults:     []faults.Spec{{Kind: "kill", At: ms(500), Nodes: "master"}},
		Variants: map[string]Variant{
			"redlock":   {Faults: []faults.Spec{{Kind: "kill", At: ms(500), Nodes: "redis-1"}}},
			"zookeeper": {Faults: []faults.Spec{{Kind: "kill", At: ms(500), Nodes: "leader"}}},
		},
		Expect: expect("X", "X", "X", "X", "X", "S", "S"),
	})
	register(Scenario{
		Name: "zk-leader-kill",
		Summary: "The ZooKeeper leader of a 3-node ensemble is killed as the fourth holder is granted the lock, " +
			"and restarted 1 s later; holders hold 200 ms, so the kill comes while the lock is held and the others wait.",
		Reproduces: "ZooKeeper's quorum guarantee: a new leader keeps every committed lock node",
		// At a holder's grant, not at a time: a kill while a release is in flight leaves that
		// release's outcome unknown, and a waiter granted then proves nothing (a timed kill at
		// 500 ms missed zookeeper-latch-watcher in 2 of 20 runs so). Sessions of 3 s: with the
		// standard 1 s, go-zookeeper gives a server up after 667 ms of silence (2/3 of the
		// session), which the JVM servers of a loaded machine reach without any fault; that
		// Disconnected woke the latch mutant with the kill removed (TestEveryScenarioNeedsItsFault,
		// load average 8 on 2 cores).
		Workload: std.merge(Workload{Duration: ms(2500), Hold: ms(200), SessionTimeout: ms(3000)}),
		Faults:   []faults.Spec{{Kind: "restart", Point: "cs:acquired", Skip: 3, For: ms(1000), Nodes: "leader"}},
		Expect: map[string]string{
			"zookeeper": "S", "setnx": na("a ZooKeeper scenario"), "setnx-expire": na("a ZooKeeper scenario"),
			"setnx-px": na("a ZooKeeper scenario"), "getset": na("a ZooKeeper scenario"),
			"token": na("a ZooKeeper scenario"), "redlock": na("a ZooKeeper scenario"),
		},
	})
	return true
}

// Seed lists the seven seed algorithms in DESIGN.md §7's column order: the default matrix.
var Seed = []string{"setnx", "setnx-expire", "setnx-px", "getset", "token", "redlock", "zookeeper"}

// expect maps the seed algorithms, in column order, to codes. A code may carry a comment after a
// colon ("S: why"), kept for the catalogue's readers.
func expect(codes ...string) map[string]string {
	m := make(map[string]string, len(codes))
	for i, c := range codes {
		m[Seed[i]] = c
	}
	return m
}

func all(code string) map[string]string {
	codes := make([]string, len(Seed))
	for i := range codes {
		codes[i] = code
	}
	return expect(codes...)
}

func na(reason string) string { return "-: " + reason }
