package scenarios

import (
	"slices"

	"github.com/lockchaos/lockchaos/faults"
)

// Teeth (DESIGN.md §11): the mutants each scenario must catch, and the variants that make it catch
// them. A mutant is its real algorithm with one mechanism removed (algorithms.Mutants); it runs
// its real algorithm's variants, so where the scenario's real cell is safe, a caught mutant proves
// the fault reaches the mechanism the real algorithm relies on. This file keeps them apart from
// the catalogue's literals (catalogue.go), so both can change without touching each other.
func init() {
	// slow-release: the generic delayed release (upstream latency from cs:before-release).
	// getset's own variant pauses between its GET and its DEL, where a plain DEL has no step, so
	// getset-no-compare runs the generic fault: the real getset's late GET then sees the new
	// holder's value and deletes nothing; the mutant's late DEL removes it.
	//
	// Both fire at the holder's fourth release (Skip 3), not its first: the first holders are
	// granted while the others' first acquires, all called at 0, run out of time together, and
	// the late DEL then often lands in a gap with no holder (getset-no-compare missed 2 of 2
	// runs under load with the first release, token-plain-del 1 of 3). In the steady state a hold
	// of 150 ms keeps the lock held ≈ 95% of the time. token's own variant gives the real token
	// the same fault as its mutants.
	//
	// The DEL is delayed 2×TTL+300 ms: it lands after the gap that follows the holder's expiry,
	// when the lock is held again. In that gap the first grant goes to a waiter that has waited
	// since before the expiry and never uses it, and getset-no-compare's losing GETSETs leave a
	// key nobody holds: with TTL+300 ms its late DEL landed there in 1 of 20 runs.
	late := make([]faults.Spec, len(must("slow-release").Faults))
	copy(late, must("slow-release").Faults)
	for i := range late {
		late[i].Skip, late[i].Amount, late[i].For = 3, ms(2*ttl+300), ms(3*ttl)
	}
	// A request timeout above the delay keeps the releasing client waiting for its DEL's reply:
	// with the default (125 ms) it gives up and closes the connection, and whether toxiproxy still
	// delivers the delayed DEL then depends on a race (getset-no-compare: missed 1 of 5 so).
	slow := Variant{Faults: late, Workload: Workload{OpTimeout: ms(3 * ttl)}}
	vary("slow-release", "token", slow)
	vary("slow-release", "getset-no-compare", slow)
	catch("slow-release", "token-plain-del", "Us: the late plain DEL removes the next holder's key (seed 003 table)")
	catch("slow-release", "getset-no-compare", "Us: the late plain DEL removes the next holder's lock")

	// latency. A slow acquisition is one whose grant the holder uses late: for the token lock
	// that needs the reply to reach the client after its key expired. Latency on one client's
	// links above the TTL does that only when its SET lands in a gap between two holders, which a
	// contended lock rarely leaves (measured: 0 of 3 runs caught token-no-validity with 600 ms on
	// client 1's replies). So the first client to get the lock stalls between the SET's reply and
	// its use of it (acquire:after-set) for TTL+100 ms — a GC pause or a loaded scheduler, or a
	// reply that sat in a socket buffer. The real token counts its validity from the call and
	// does not write; the mutant counts a TTL from after the stall and writes into the next
	// holder's lease. A hold of 150 ms keeps the lock held nearly all the time, so that write
	// overlaps a holder.
	// The acquire timeout outlasts a stall that comes late in a contended acquire: otherwise the
	// stall ends the call (measured: redlock-no-validity missed 1 of 5 runs so, its first quorum
	// came 690 ms into a 1 s acquire).
	stall := Workload{Hold: ms(150), AcquireTimeout: ms(4000)}
	vary("latency", "token", Variant{
		Faults:   []faults.Spec{{Kind: "client-pause", Point: "acquire:after-set", For: ms(ttl + 100)}},
		Workload: stall,
	})
	// redlock asks its nodes in parallel, each under a timeout of at most TTL/10, so no network
	// latency can make an acquisition that succeeds slow: the slow acquisition antirez's check
	// guards against is the client's own stall between the replies and its validity computation
	// (a GC pause, the scheduler). The first client to reach acquire:after-quorum stalls there
	// for TTL+300 ms: the real Redlock finds no validity left and retries; the mutant writes.
	// redsync, also of the redlock family, offers no such point and keeps the minority latency.
	lat := must("latency")
	vary("latency", "redsync", lat.Variants["redlock"])
	vary("latency", "redlock", Variant{
		Faults:   []faults.Spec{{Kind: "client-pause", Point: "acquire:after-quorum", For: ms(ttl + 300)}},
		Workload: Workload{OpTimeout: ms(ttl / 10), Hold: stall.Hold, AcquireTimeout: stall.AcquireTimeout},
	})
	catch("latency", "token-no-validity", "Uc: the reply came after the lease ran; the holder trusted a TTL from it")
	catch("latency", "redlock-no-validity", "Uc: antirez's check removed; the slow acquisition's lease had run")

	// partition. token+watchdog: the holder holds TTL+300 ms and writes under the partition, after
	// its key expired (no renewal got through) and the next client was granted. The real
	// watchdog gave the lease up at its first failed renewal (TTL/3 + one request timeout) and
	// its careful client skips the write; the blind one writes. With a hold of 10 ms the write
	// would come before the key could expire, and the mutant would pass.
	vary("partition", "token+watchdog", Variant{Workload: Workload{Hold: ms(ttl + 300), StuckAfter: ms(2500), Tail: ms(1000)}})
	// zookeeper-ignore-session: the holder holds past the heal (1.7 s, partition 1.3 s), so it
	// reconnects and is told its session expired before it writes: the real recipe's Valid is
	// then false and it skips the write (measured S, 3 of 3 runs); the mutant writes into the
	// next holder's lock. Pinned here, apart from the zookeeper variant, which shows the
	// session-expiry caveat (a holder that writes while still cut off cannot know).
	vary("partition", "zookeeper-ignore-session", Variant{
		Faults:   []faults.Spec{{Kind: "partition", Point: "cs:acquired", Clients: "trigger", For: ms(2*ttl + 300)}},
		Workload: Workload{Hold: ms(2*ttl + 700), AcquireTimeout: ms(4000), StuckAfter: ms(2500), Tail: ms(1000)},
	})
	catch("partition", "token-watchdog-blind", "Uc: renewals fail under the partition; the blind holder writes anyway")
	catch("partition", "zookeeper-ignore-session", "Uc: the holder writes after it learned its session expired")

	catch("node-kill", "redlock-no-quorum", "Us: one node's SET is a grant: two clients hold disjoint nodes")
	catch("node-kill", "redlock-all-nodes", "X: with one master of five dead, no client gets every node")
	catch("restart", "redlock-no-quorum", "Us: one node's SET is a grant (the real redlock is Us here too)")
	catch("restart", "token-plain-del", "Us: as token: the restarted master forgot the key")
	catch("baseline", "zookeeper-watch-lowest", "Us: every waiter watching the lowest node takes the lock when it goes")
	catch("baseline", "redlock-no-quorum", "Us: racing clients each win some nodes")
	catch("client-pause", "fence-unchecked",
		"Ul: the paused holder's stale write is accepted: lost updates > 0, where token+fence loses none")
	catch("client-crash", "token-no-ttl", "X: the crashed holder's key never expires (seed 002 problem 1)")
	// getset-race: the race forced at its point (DESIGN.md §10). The first four waiters that find
	// the crashed holder's timestamp expired stop before their GETSET, so others find it expired
	// too and GETSET first, and the four come back, 40 ms apart, with an expiry already past: the
	// real getset's compare makes every GETSET but the first a loss, yet a losing GETSET still
	// writes its own expiry — a stopped waiter's sets the current holder's key into the past, the
	// holder's release then finds another value and leaves it, and the next waiter takes the lock
	// over while the holder's lease runs. The blind mutant holds after each GETSET (it missed 2 of
	// 3 runs to chance without the stops). One stop of 50 ms caught the real getset in 10 of 20
	// runs: its GETSET often landed when nobody held (right after a release, or while an
	// immediate loser's overwrite left a key nobody held until it expired). One stop of TTL+100 ms
	// gave 19 of 20 alone but 2 of 6 in matrices, beside other cells; four stops from TTL+100 ms,
	// holds of 30 ms, and an acquire timeout of 3 s (so the stopped waiters, called at the start,
	// still send their GETSET): 20 of 20 seeds, 12 of them two or three at a time.
	race := slices.Clone(must("getset-race").Faults)
	for _, d := range []int{100, 140, 180, 220} { // four chances, 40 ms apart, to land on a holder
		race = append(race, faults.Spec{Kind: "client-pause", Point: "acquire:before-getset", Times: 1, For: ms(ttl + d)})
	}
	vary("getset-race", "getset", Variant{Faults: race, Workload: Workload{Hold: ms(30), AcquireTimeout: ms(3000)}})
	catch("getset-race", "getset-blind-takeover", "Us: several waiters GETSET the expired value and all hold")
	// zk-leader-kill: a leader kill keeps every committed node and every session (the real cell,
	// S, shows the quorum guarantee), but every client loses its server while the ensemble elects
	// a new leader, and ZooKeeper delivers that session event (Disconnected) to every outstanding
	// watcher. The latch lock of many blog posts (a watcher that counts a latch down on any event,
	// then "the lock is mine") wakes every waiter into the lock at the kill; Curator's recipe wakes
	// too but lists the children again. Without the kill it is safe (4 of 4 baseline seeds).
	catch("zk-leader-kill", "zookeeper-latch-watcher", "Us: the Disconnected event wakes every waiter's watcher into the lock")
	// Scenarios where every real algorithm of the mutants' families is itself unsafe can only catch
	// a mutant that is unsafe for the same reason: these show the fault fires, not which mechanism
	// it reaches (see the report of issue 16).
	catch("clock-skew", "getset-no-compare", "Us: as getset: the skewed client takes a valid lock over")
	catch("failover", "token-plain-del", "Us: as token: the promoted replica never saw the key")
	catch("clock-jump", "token-plain-del", "Us: as token: the jumped node lets the key expire early")
}

// must returns a catalogue scenario; it panics on an unknown name (a programming error).
func must(name string) Scenario {
	s, ok := catalogue[name]
	if !ok {
		panic("scenarios: unknown scenario " + name)
	}
	return s
}

// catch adds a mutant the scenario must catch, with its verdict code (Us, Uc or X and an optional
// comment). Call it from init; an unknown scenario or mutant, or another code, panics.
func catch(scenario, mutant, code string) {
	s := must(scenario)
	cs := make(map[string]string, len(s.Catches)+1)
	for k, v := range s.Catches {
		cs[k] = v
	}
	cs[mutant] = code
	s.Catches = cs
	if err := s.Validate(); err != nil {
		panic(err)
	}
	catalogue[scenario] = s
}
