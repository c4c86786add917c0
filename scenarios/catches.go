package scenarios

import (
	"slices"

	"github.com/lockchaos/lockchaos/faults"
)

// Teeth (docs/design.md#mutants): the mutants each scenario must catch, and the variants that make it catch
// them. A mutant is its real algorithm with one mechanism removed (algorithms.Mutants); it runs
// its real algorithm's variants, so where the scenario's real cell is safe, a caught mutant proves
// the fault reaches the mechanism the real algorithm relies on. This file keeps them apart from
// the catalogue's literals (catalogue.go), so both can change without touching each other.
func init() {
	// slow-release and latency act on the wire (catalogue.go), so they reach the mutants as they
	// reach any lock: a late plain DEL (token-plain-del, getset-no-compare), a late GET reply before
	// a DEL, a reply trusted for a TTL from its arrival (token-no-validity); redlock-no-validity is
	// reached by its own named point (the redlock variant of latency says why).
	catch("slow-release", "token-plain-del", "Us: the late plain DEL removes the next holder's key (seed 003 table)")
	catch("slow-release", "getset-no-compare", "Us: the late plain DEL removes the next holder's lock")
	catch("latency", "token-no-validity", "Uc: the reply came after the lease ran; the holder trusted a TTL from it")

	catch("latency", "redlock-no-validity", "Uc: antirez's check removed; the slow acquisition's lease had run")

	// partition: the holder stays busy past its TTL under the partition (catalogue.go), so the
	// blind watchdog, whose renewals cannot get through, writes after the next client was granted.
	// zookeeper-ignore-session: the holder holds past the heal (1.7 s, partition 1.3 s), so it
	// reconnects and is told its session expired before it writes: the real recipe's Valid is
	// then false and it skips the write (measured S, 3 of 3 runs); the mutant writes into the
	// next holder's lock. Pinned here, apart from the zookeeper variant, which shows the
	// session-expiry caveat (a holder that writes while still cut off cannot know).
	vary("partition", "zookeeper-ignore-session", Variant{
		Faults:   []faults.Spec{{Kind: "partition", Point: "cs:acquired", Clients: "trigger", For: fixed(2*ttl + 300)}},
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
	// A lock that marks no point, crashed between its two commands by the wire crash (the first
	// reply that took effect: its SETNX's), leaves a key with no expiry.
	catch("client-crash", "user-token-two-command-expiry", "X: the client died as its SETNX's reply came, before its PEXPIRE: the key never expires (seed 002 problem 1)")
	// getset-race: the race forced at its point (docs/design.md#evidence). The first four waiters that find
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
		race = append(race, faults.Spec{Kind: "client-pause", Point: "acquire:before-getset", Times: 1, For: leases(1, d)})
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
