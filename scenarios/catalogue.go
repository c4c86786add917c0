package scenarios

import (
	"fmt"

	"github.com/lockchaos/lockchaos/faults"
)

// The catalogue (docs/design.md#catalogue-and-expectations). Every fault is aimed by an event — the first holder, at the named
// point where the published failure happens — so each known bug shows within seconds, not after
// minutes of random hope. TTLs are short (500 ms) for the same reason. The faults are sized in
// leases of the lock under test (docs/design.md#faults-sized-to-the-lease: a pause of lease+δ, a jump of one lease), resolved
// when they fire against the lease the lock really holds — what its clients report, else the run's
// TTL — so at the catalogue's 500 ms they are what they always were, and a library that holds a
// 1 s lease meets a pause of 1.4 s, not 900 ms.

const ttl = 500 // ms, the catalogue's lease

// succeeded is a wire point's "ok: true": the reply of a request that took effect.
var succeeded = true

// ZooKeeper's session timeout is 1 s: shorter sessions expire spuriously on a loaded 2-core machine.
var std = Workload{Clients: 5, TTL: ms(ttl), Hold: ms(10), Duration: ms(2000), SessionTimeout: ms(1000)}

// BareMajority is the Redlock setup of Kleppmann's restart and clock-jump failures over five
// masters: client 1 reaches only redis-1..3 and the other clients only redis-3..5, so every
// majority goes through redis-3. The other clients wait at their first acquire until client 1
// holds (at most 1 s): racing them for redis-3 from the start, client 1 won its first majority
// only at 750 ms in 2 of 6 runs of user-redlock × clock-jump (seed 346663), and in CI's loaded
// selftest never within the 2 s run. When client 1 reaches hit's point (cs:acquired when unset),
// the fault hits redis-3, and client 1 keeps working (client-stall) until another client holds
// the lock — it wins redis-3..5 — or for wait at most (less than client 1's lease): the moment
// the failure does harm, whatever the Redlock's retry timing. A fault on one node of a full
// majority of five would not matter.
func BareMajority(hit faults.Spec, clients int, wait faults.Size) []faults.Spec {
	if hit.Point == "" {
		hit.Point = "cs:acquired"
	}
	hit.Client, hit.Nodes = 1, "redis-3"
	others := "2"
	if clients > 2 {
		others = fmt.Sprintf("2-%d", clients)
	}
	specs := []faults.Spec{
		{Kind: "partition", Clients: "1", Nodes: "redis-4,redis-5", Setup: true},
		{Kind: "partition", Clients: others, Nodes: "redis-1,redis-2", Setup: true},
	}
	for c := 2; c <= clients; c++ {
		specs = append(specs, faults.Spec{Kind: "client-stall", Point: "cs:before-acquire", Client: c,
			Until: "cs:acquired", For: fixed(1000), Setup: true})
	}
	return append(specs, hit,
		faults.Spec{Kind: "client-stall", Point: hit.Point, Client: 1, Until: "cs:before-read", For: wait})
}

// The faults of partition, client-pause, latency and slow-release, which variants reuse.
var (
	partition = []faults.Spec{
		{Kind: "partition", Point: "cs:acquired", Clients: "trigger", AtLeast: outlast(2, 300),
			Until: "cs:before-read", For: outlast(3, 300)},
		{Kind: "client-stall", Point: "cs:acquired", For: outlast(1, 300)},
	}
	latency = []faults.Spec{{Kind: "latency", Point: "cs:before-acquire", Skip: 6, Amount: leases(2, 300),
		Wire: &faults.Wire{AfterReply: "*", OK: &succeeded, Until: "cs:before-read"}}}
	clientPause = []faults.Spec{{Kind: "client-pause", Point: "cs:before-write", AtLeast: outlast(1, 400),
		Until: "cs:before-read", For: outlast(3, 400)}}
	clientPauseFixed = []faults.Spec{{Kind: "client-pause", Point: "cs:before-write", For: outlast(1, 400)}}
	slowRelease      = []faults.Spec{
		{Kind: "latency", Point: "cs:before-release", Skip: 3, Amount: leases(3, 0),
			Wire: &faults.Wire{Before: "*", Until: "cs:before-read"}},
		{Kind: "latency", Point: "cs:before-release", Skip: 6, Times: 3, Amount: leases(3, 0),
			Wire: &faults.Wire{AfterReply: "*", Until: "cs:before-read"}},
	}
)

// heldFor returns specs without their until points: each fault lasts its cap (For, or a wire
// latency's Amount). For a lock that nobody can take over while the fault holds its holder (no
// expiry, a session the fault keeps), an until could never happen, and a run that waited for one
// would prove nothing (docs/design.md#faults-sized-to-the-lease); the fixed fault says what it does.
func heldFor(specs []faults.Spec) []faults.Spec {
	out := make([]faults.Spec, len(specs))
	for i, s := range specs {
		s.Until, s.AtLeast = "", faults.Size{}
		if s.Wire != nil {
			w := *s.Wire
			w.Until = ""
			s.Wire = &w
		}
		out[i] = s
	}
	return out
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
		Name: "client-crash",
		Summary: "The first client whose command succeeds dies as that reply reaches it (between SETNX and its EXPIRE, " +
			"for a lock that takes two commands), and the next holder crashes right after acquiring; neither releases.",
		Reproduces: "seed 002 problem 1: a lock without expiry is never deleted when its holder dies",
		Needs:      "a crash at the first successful reply on the wire and at cs:acquired (acquire:after-setnx for setnx-expire)",
		// The wire crash reaches any lock whose links are parsed (Redis, ZooKeeper), in any
		// language and marking no point (docs/design.md#faults-sized-to-the-lease): the client dies as the first reply that
		// took effect reaches it — after a SETNX, before the PEXPIRE a two-command lock sends next,
		// so its key stays for good; after a SET NX PX, a lease that expires. cs:acquired then
		// crashes a holder of the whole lock, as a process dies between two steps of its work.
		Workload: std.merge(Workload{StuckAfter: ms(1500)}),
		Faults: []faults.Spec{
			{Kind: "client-crash", Wire: &faults.Wire{AfterReply: "*", OK: &succeeded}, Refinement: true},
			{Kind: "client-crash", Point: "cs:acquired"},
		},
		Variants: map[string]Variant{
			"setnx-expire": {Faults: []faults.Spec{{Kind: "client-crash", Point: "acquire:after-setnx"}}},
			// setnx's key never expires: after the first crash nobody holds again, so the second
			// could never fire, and the run, waiting for it, would not stop once decided stuck
			// (2 of 3 runs then came out unknown on a loaded machine: a harness stall in the
			// run's last 1.5 s cut the stall that shows it stuck).
			"setnx": {Faults: []faults.Spec{{Kind: "client-crash", Wire: &faults.Wire{AfterReply: "*", OK: &succeeded}}}},
		},
		Expect: expect("X", "X", "S", "S", "S", "S", "S"),
	})
	register(Scenario{
		Name: "client-pause",
		Summary: "The holder pauses (a GC pause, SIGSTOP) after its validity check and before its write, " +
			"past its lease (ZooKeeper: the session timeout) and until another client holds; its links are silent meanwhile.",
		Reproduces: "Kleppmann, How to do distributed locking (the GC pause); Jepsen etcd 3.4.3",
		Needs:      "pause > TTL (or session timeout) at cs:before-write, until another client holds",
		Workload:   std,
		// The pause outlasts the lease and its renewal, and then lasts until another client holds
		// (3 leases and 400 ms at most): a lock whose waiters poll slowly (tooz's etcd3gw lock polls
		// once a second) was taken over only after a fixed pause had ended, the holder wrote into
		// a free lock, and the run read as safe with its evidence in (tooz-etcd3gw seed 1: paused
		// 2 s at 4.15 s, the first waiter granted at 6.22 s). A pause whose until never comes is
		// missed: unknown, never safe. Locks nobody can take over during a pause keep a fixed one
		// (setnx here, the session locks in expect_postgres.go).
		Faults: clientPause,
		Variants: map[string]Variant{
			// No expiry: nobody takes the lock over; the fixed pause says what it does.
			"setnx": {Faults: clientPauseFixed},
			// The server notices a silent session only after the timeout plus up to a tick.
			// Sized against the session (1 s), which is the lease a ZooKeeper lock reports.
			"zookeeper": {Faults: []faults.Spec{{Kind: "client-pause", Point: "cs:before-write", For: leases(2, 0)}}},
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
			"getset": {Faults: []faults.Spec{{Kind: "client-pause", Point: "cs:before-write", Skip: 12, For: outlast(3, 0)}}},
		},
		Expect: expect("S: others wait, the lock never expires", "Uc", "Uc", "Uc", "Uc", "Uc", "Uc"),
	})
	register(Scenario{
		Name:       "clock-skew",
		Summary:    "Client 2's clock runs 1.5 s (3×TTL) ahead of the others from the start.",
		Reproduces: "seed 000 时间戳的问题: a timestamp lock needs the clients' clocks to agree",
		Needs:      "offset > TTL on a client that waits while another holds",
		Workload:   std,
		Faults:     []faults.Spec{{Kind: "clock-skew", Clients: "2", Amount: leases(3, 0)}},
		Expect:     expect("S", "S", "S", "Us", "S", "S", "S"),
	})
	register(Scenario{
		Name: "slow-release",
		Summary: "A holder's release is late on the wire: first the request of its fourth release is held until " +
			"another client holds the lock (a late plain DEL), then the first reply of a later release is held " +
			"so (a late GET reply, and the DEL that trusts it).",
		Reproduces: "seed 003 table: a late DEL removes another client's lock; seed RedisLockUtil: GET, compare, then DEL",
		Needs:      "the release's first command (or its reply) held until the holder's key expired and another client holds",
		// Both faults act at the release's own commands on the wire (docs/design.md#wire-points), so they reach
		// every Redis lock without a named point in its code: the first request after the holder
		// reached cs:before-release, and later the first reply. Each is held until another client
		// reaches cs:before-read, holding the lock with a lease it found valid — the moment a late
		// command does harm, whatever the lock's retry timing (a waiter granted after the expiry
		// but past its own validity releases at once, unused: with cs:acquired the late GET reply
		// of user-token-get-del was let go for such a grant, and its DEL removed a key nobody
		// would use) — or 3×TTL at most (a lock without expiry is never taken over: setnx). A lock
		// whose release compares atomically on the server (Lua) deletes nothing either way; a
		// plain DEL removes the new holder's key (the first fault), and a GET whose reply comes
		// back after the takeover still shows the holder's own value, so the DEL it leads to
		// removes the new holder's key (the second). The releases are the fourth and the seventh,
		// in the steady state: the first holders are granted while the others' first acquires,
		// all called at 0, run out together, and a takeover then found no waiter. The late GET
		// reply comes at three releases in a row: getset's holder whose key a losing GETSET
		// overwrote (getset-race's flaw: waiters that saw it expire together) finds another
		// value and deletes nothing — at --parallel 6 the seventh release's holder was one, and
		// the cell came out safe once in two matrices. Holds of 150 ms
		// keep the lock held nearly all the time; the request timeout (3×TTL) keeps the releasing
		// client waiting for its held reply rather than closing the connection.
		Workload: std.merge(Workload{Hold: ms(150), Duration: ms(3000), OpTimeout: ms(3 * ttl), ReleaseTimeout: ms(3000)}),
		Faults:   slowRelease,
		Variants: map[string]Variant{
			// Nobody takes a ZooKeeper lock over while its holder's znode stands, so the first
			// fault holds the held delete its whole 1.5 s, and a loaded run then reached only 5
			// of the 7 releases before its end (1 of 20 runs at --parallel 2, 5 of 20 at 4).
			"zookeeper": {Workload: Workload{Duration: ms(4500)}},
			// setnx's key never expires: nobody takes it over while its DEL is held, and the
			// first fault holds it its whole cap, as it always did.
			"setnx": {Faults: append(heldFor(slowRelease[:1]), slowRelease[1:]...)},
		},
		Expect: expect("S: no expiry, the DEL is the holder's own", "Us", "Us", "Us: the GET's late reply leads its DEL to the new holder's key", "S", "S", "S"),
	})
	register(Scenario{
		Name: "failover",
		Summary: "redis-sentinel: replication is cut from the start, the first holder's lock lands on the " +
			"master only, the master is killed and Sentinel promotes the replica, which never saw the lock " +
			"(postgres-standby: the primary is fenced and the standby promoted; advisory locks are never replicated).",
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
			// Requests of at most 20 ms, as in clock-jump: with TTL/10 (200 ms) a Redlock that
			// waits out its two cut-off nodes on every attempt, twice (user-redlock unlocks every
			// node after a failed one), let client 1 win no majority in 6 of 20 runs.
			"redlock": {Faults: BareMajority(faults.Spec{Kind: "restart"}, 2, leases(0.5, 0)),
				Workload: Workload{Clients: 2, Duration: ms(3000), TTL: ms(2000), OpTimeout: ms(20)}},
			// The ZooKeeper family keeps the 2 s of its measurements: its lease is the session. A
			// ZooKeeper restart (a JVM) took up to 2 s in a loaded selftest, all of it at the
			// holder's point: with a 2 s fault phase the holder's write (after its 700 ms hold)
			// came after the run's end, and 1 of 5 runs was unknown (no write). In a --parallel 6
			// matrix beside two CPU-bound loops it took 3.6 s (3 of 5 matrices unknown with 3 s);
			// 5 s leaves it room, and a run that is decided sooner stops sooner.
			"zookeeper": {Faults: []faults.Spec{{Kind: "restart", Point: "cs:acquired", Nodes: "leader"}},
				Workload: Workload{TTL: ms(2000), Duration: ms(5000)}},
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
		Faults:     []faults.Spec{{Kind: "clock-jump", Point: "cs:acquired", Nodes: "master", Amount: leases(1, 0)}},
		Variants: map[string]Variant{
			// Requests of at most 20 ms: a Redlock waits out its two cut-off nodes on every attempt
			// (user-redlock twice, as it unlocks every node after a failed one), and with TTL/10
			// client 2's winning attempt came after client 1's lease (seed 1).
			"redlock": {Faults: BareMajority(faults.Spec{Kind: "clock-jump", Amount: leases(1, 0)}, 2, leases(0.7, 0)),
				Workload: Workload{Clients: 2, OpTimeout: ms(20)}},
		},
		Expect: expect("S: the key has no TTL", "Us", "Us", "S: the expiry is in the value, read by client clocks", "Us", "Us",
			"-: ZooKeeper sessions do not expire by a server wall clock"),
	})
	register(Scenario{
		Name: "partition",
		Summary: "The holder is cut off from the lock service (not from the resource) right after it acquired, for " +
			"longer than the TTL / session timeout, and keeps working past its lease before it checks it; what it " +
			"sent meanwhile arrives when the partition heals, as another client holds. ZooKeeper: it writes while " +
			"still cut off, after the ensemble expired its session, which it cannot know yet.",
		Reproduces: "Curator's session-expiry caveat (CURATOR-206); Jepsen; seed 003 table (the DEL blocked in the network, accepted later)",
		Needs:      "partition > TTL (session timeout) at cs:acquired; the holder busy past its TTL under it",
		// The partition holds the bytes and delivers them at the heal (docs/design.md#faults). It lasts
		// 2×TTL+300 ms, then heals when another client holds the lock (cs:before-read), TTL
		// later at most (a lock without expiry is never taken over: setnx): the cut-off holder's
		// release, sent under it at TTL+300 ms, lands on a grant, whatever the lock's retry
		// timing, and its next acquire meets the partition too (user-redlock-error-vote counts
		// the timeouts as votes). (Healed at a fixed 1.3 s, setnx-expire's held DEL once landed
		// in a gap between holds, 2 ms after a release, at --parallel 6: it removed the next
		// grant's key between its SETNX and EXPIRE, the grant failed, and no two clients
		// overlapped. Healed as soon as another client held after the release, the cut-off
		// client's next acquire went through, and the error-vote mutant was not caught.) The
		// holder stays busy TTL+300 ms at cs:acquired (client-stall: its links and threads run,
		// as a holder that is working does), so a lock that keeps believing in a lease it cannot
		// renew — a watchdog that never gives up, a lease trusted until release — writes after
		// the next client was granted, and a careful holder finds its validity gone and skips
		// its write. Any lock reaches both faults: they are the harness's own points. Holds of
		// 150 ms keep the lock held nearly all the time.
		Workload: std.merge(Workload{Hold: ms(150), AcquireTimeout: ms(4000), StuckAfter: ms(1500), Duration: ms(2500), Tail: ms(1000)}),
		Faults:   partition,
		Variants: map[string]Variant{
			// A ZooKeeper lock has no validity of its own: the holder believes it until its client
			// is told the session expired (the recipe's Valid, Curator's LOST). The caveat is a
			// holder that writes while still cut off, after the ensemble expired its session (1 s
			// and a tick): partition 2.3 s, write at 1.6 s. One that writes after the heal has been
			// told, and skips its write (zookeeper-ignore-session's cell, scenarios/catches.go).
			"zookeeper": {Faults: []faults.Spec{{Kind: "partition", Point: "cs:acquired", Clients: "trigger", For: leases(2, 300)}},
				Workload: Workload{Hold: ms(1600), AcquireTimeout: ms(4000), StuckAfter: ms(3000), Tail: ms(1000)}},
			// setnx: the cut-off holder's next SETNX waits in the partition behind its DEL, so
			// at the heal it frees the lock and takes it again at once; re-acquiring within a
			// few ms of each release, it then kept the lock from the waiters (10 ms apart) past
			// the danger window — no contended grant, unknown (a selftest of make test, and 1 to
			// 3 in 5 matrices at --parallel 6). A think time of 30 ms after each release lets
			// a waiter in at the holder's first release after the heal.
			// The lock never expires, so nobody takes it over while its holder is cut off: the
			// partition lasts its whole cap, as it always did, and says so rather than wait for
			// a takeover that cannot come (docs/design.md#faults-sized-to-the-lease: an until that never happened).
			"setnx": {Workload: Workload{Think: ms(30)}, Faults: heldFor(partition)},
		},
		// setnx: its DEL, held in the partition, arrives at the heal and frees the lock (stuck while
		// the partition dropped it). setnx-expire and setnx-px: the plain DEL arrives after the key
		// expired and another client took the lock, and removes that client's key.
		Expect: expect("S: the held DEL arrives at the heal", "Us: the held plain DEL removes the next holder's key",
			"Us: the held plain DEL removes the next holder's key", "S", "S", "S", "Uc"),
	})
	register(Scenario{
		Name: "latency",
		Summary: "The reply that wins an acquisition is slow on the wire: held until another client holds the lock " +
			"(the lease ran out meanwhile). Quorum locks: every winning reply of the acquisition held so (a slow " +
			"majority); ZooKeeper: a minority's replies delayed by TTL/2+50 ms from 300 ms on.",
		Reproduces: "antirez: Redlock's validity check rejects slow acquisitions; Kleppmann: a lease counted from the reply",
		Needs:      "the winning reply held past the TTL; a request timeout longer than that",
		// At the seventh acquire call (Skip 6: every client's first call is at 0), the first reply that succeeds on
		// the caller's links — the SET NX that won, whatever the lock calls it — is held on the
		// wire until another client reaches cs:before-read, holding the lock: the key expired meanwhile, as a reply
		// that sat in a socket buffer past the lease. A lock that counts its validity from the
		// call sees none left and does not write; one that counts it from the reply, or trusts
		// its lease until release, writes into the next holder's lease. Holds of 150 ms keep the
		// lock held, and a think time of 30 ms lets a waiter in between two acquisitions of the
		// same client (setnx-expire's holder, re-acquiring at once, kept the lock to itself through
		// the danger window: no contended grant, unknown). The hold is capped at two leases and
		// 300 ms: the first takeover after the lease ran out is often unused, since a waiter that
		// had waited longer than the lease when it won finds no validity left (the careful client
		// counts from its call) and releases at once, and the first grant found valid can then
		// come a lease later (getset × latency missed 1 of 10 runs on a loaded machine with a cap
		// of one lease and 300 ms: its takeover at 827 ms of a hold from 312 ms was unused, and
		// the next, valid, came at 1.32 s). The cap ends inside the request timeout (4×TTL): a
		// lock without expiry (setnx) is never taken over, and a reply held past its client's
		// timeout would leave its key set for good — a lost reply, not a slow one.
		Workload: std.merge(Workload{OpTimeout: ms(4 * ttl), Hold: ms(150), Think: ms(30), AcquireTimeout: ms(4000)}),
		Faults:   latency,
		Variants: map[string]Variant{
			// A quorum lock asks its nodes in parallel: every reply that wins a node is held (Each),
			// so the majority comes after the lease ran out — for a lock whose request timeout
			// outlasts it. The built-in redlock asks each node under a timeout of at most TTL/10
			// (antirez's advice), so its held replies time out and never make a slow majority: its
			// slow acquisition is its own stall between the replies and the validity computation
			// (a GC pause, the scheduler), which only its named point reaches. So the first
			// client to reach acquire:after-quorum stalls there for TTL+300 ms — a refinement that
			// only the locks marking that point get (offered, scenario.go). The acquire timeout
			// outlasts a stall late in a contended acquire (redlock-no-validity missed 1 of 5 runs
			// without it).
			// Client 1's every acquisition is so slowed: a reply that wins only a
			// minority is let go as soon as another client holds (a single hold at the fifth acquire
			// call often caught an attempt that lost, and the cell proved nothing). Three clients:
			// with five, client 1 seldom won a majority in the 2 s (user-redlock-no-validity was
			// missed in 1 of 4 seeds, client 1 granted only after the faults).
			"redlock": {Faults: []faults.Spec{
				{Kind: "latency", Point: "cs:before-acquire", Client: 1, Times: -1, Amount: leases(1, 300),
					Wire: &faults.Wire{AfterReply: "*", OK: &succeeded, Until: "cs:before-read", Each: true}},
				{Kind: "client-pause", Point: "acquire:after-quorum", For: leases(1, 300), Refinement: true},
			}, Workload: Workload{Clients: 3}},
			// A ZooKeeper lock has no lease for a held reply to outlast: its lease is the session,
			// and holding a reply holds that connection's heartbeats (client-pause and partition
			// reach that). Latency on a minority of the ensemble shows the quorum carries on.
			"zookeeper": {Faults: []faults.Spec{{Kind: "latency", At: ms(300), For: fixed(1500), Nodes: "minority", Amount: fixed(ttl/2 + 50)}}},
			// No takeover can come while the winning reply is held: setnx's key never expires,
			// and setnx-expire's EXPIRE waits behind the held SETNX reply. The reply is held its
			// whole cap, as it always was.
			"setnx":        {Faults: heldFor(latency)},
			"setnx-expire": {Faults: heldFor(latency)},
		},
		// setnx-px: its plain DEL, sent after the late reply told it its lease had run out, removes
		// the key of the client granted meanwhile: an illegal grant follows, and the overlap it
		// makes (runs show both classes; which the checker names first varies: U).
		Expect: expect("S", "S", "U: its plain DEL after the late grant removes the next holder's key", "S", "S", "S", "S"),
	})
	register(Scenario{
		Name:       "getset-race",
		Summary:    "20 clients; the first holder crashes, and the waiters all find its expired timestamp at once.",
		Reproduces: "seed 000: GETSET lets exactly one of the racing waiters win",
		Workload:   std.merge(Workload{Clients: 20}),
		Faults:     []faults.Spec{{Kind: "client-crash", Point: "cs:acquired"}},
		Expect: map[string]string{
			// docs/design.md#catalogue-and-expectations said S. With the race forced at its point (scenarios/catches.go: two
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
		// load average 8 on 2 cores). Acquires of up to 3 s: five clients holding 200 ms each make
		// the last waiter wait about 850 ms, and with the default 1 s a waiter that gave up under
		// load deleted its node, which woke its successor — the latch mutant's bug without any
		// fault (2 of 5 runs of that test here, seed 1: client 1's acquire timed out at 1.02 s,
		// client 2 was granted at 1.04 s while client 4 held). A fault phase of 4 s: the kill
		// comes at the fourth grant, which a loaded machine's JVMs reach late, and the two
		// survivors must elect a leader and serve the waiters before the run ends; with 2.5 s,
		// CI's selftest once saw no grant after the kill (zookeeper unknown, seed 416901). A safe
		// run stops once decided anyway, a session after the restarted node is back.
		Workload: std.merge(Workload{Duration: ms(4000), Hold: ms(200), SessionTimeout: ms(3000), AcquireTimeout: ms(3000)}),
		Faults:   []faults.Spec{{Kind: "restart", Point: "cs:acquired", Skip: 3, For: fixed(1000), Nodes: "leader"}},
		Expect: map[string]string{
			"zookeeper": "S", "setnx": na("a ZooKeeper scenario"), "setnx-expire": na("a ZooKeeper scenario"),
			"setnx-px": na("a ZooKeeper scenario"), "getset": na("a ZooKeeper scenario"),
			"token": na("a ZooKeeper scenario"), "redlock": na("a ZooKeeper scenario"),
		},
	})
	return true
}

// Seed lists the seven seed algorithms in docs/design.md#catalogue-and-expectations's column order: the default matrix.
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
