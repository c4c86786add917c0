package checker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// The real slow-release run of setnx-expire (5 clients, ~240 acquires, eight timed-out SETNXs and
// one timed-out DEL early on) made the lock check run out of its 10s timeout: every unknown
// outcome returned at infinity. With the reductions of lockHistory the check decides it.
//
// It decides Ok, and the run is safe: the reductions only restrict where porcupine may place
// operations, so a history they leave linearizable was linearizable before them too. The run's
// expectation (unsafe-service, the catalogue's cell for the scenario) did not materialise in this
// run: no grant overlaps a valid lease, no critical sections overlap, no update was lost.
func TestSlowReleaseSetnxExpireFixtureDecided(t *testing.T) {
	h, err := history.ReadFile("testdata/slow-release-setnx-expire.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, skip := range []bool{false, true} {
		r := CheckHistory(h, Options{SkipVisualization: skip}).Result
		if r.LockCheck.Result != string(porcupine.Ok) || r.ResourceCheck.Result != string(porcupine.Ok) {
			t.Fatalf("skip=%v: lock %s resource %s, want Ok and Ok", skip, r.LockCheck.Result, r.ResourceCheck.Result)
		}
		if r.Verdict != Safe || r.ExclusionViolations+r.ServiceViolations+r.LostUpdates != 0 {
			t.Fatalf("skip=%v: verdict %s excl %d svc %d lost %d first %+v", skip, r.Verdict,
				r.ExclusionViolations, r.ServiceViolations, r.LostUpdates, r.FirstViolation)
		}
	}
}

// slowRelease builds the slow-release bug as it shows when it bites: client 4's DEL is delayed
// (its release and all its later acquires time out), the lock expires and goes round the other
// clients for many critical sections while waiters poll long, and then the late DEL removes the
// key of the holder of round bite, so that a waiter is granted while that holder's lease is valid
// and unreleased. Before the reductions the unknown operations kept the lock check busy past its
// timeout; now it is Illegal, and the run unsafe, service class.
func slowRelease(rounds, bite int) *history.History {
	b := newHB("setnx-expire", 100*time.Millisecond)
	a := b.acquire(4, 0, 1)
	b.read(4, a, 1.5, 2, 0)
	b.write(4, a, 2.5, 3, 1)
	b.value = 1
	b.op(history.OpRelease, 4, a, 3.5, history.TypeInfo, 53.5, nil, "outcome of DEL unknown")
	for k := range 8 { // client 4's SETNXs time out too
		t := 55 + float64(k)*51
		b.op(history.OpAcquire, 4, 0, t, history.TypeInfo, t+50, nil, "outcome of SETNX unknown")
	}
	// Clients 1–3 each wait from the start; then they take turns, each next waiter invoking its
	// acquire while the current holder is still in its critical section.
	t := 101.0
	next := []float64{0.1, 0.2, 0.3}
	for k := range rounds {
		c := k%3 + 1
		acq := b.acquire(c, next[c-1], t)
		b.read(c, acq, t+0.5, t+1, b.value)
		if k == bite {
			// The late DEL removed acq's key: client c%3+1, polling, is granted at once.
			d := c%3 + 1
			g := b.acquire(d, next[d-1], t+2)
			b.read(d, g, t+2.5, t+3, b.value)
			b.write(d, g, t+3.5, t+4, b.value+1)
			b.release(d, g, t+4.5, t+5)
			b.write(c, acq, t+5.5, t+6, b.value+1)
			b.value++
			b.op(history.OpRelease, c, acq, t+6.5, history.TypeFail, t+7, nil, "not held")
			next[c-1], next[d-1] = t+8, t+8
			t += 10
			continue
		}
		b.write(c, acq, t+1.5, t+2, b.value+1)
		b.value++
		next[k%3] = t + 1.2 // the next-but-one waiter asks during this section
		b.release(c, acq, t+2.5, t+3)
		t += 4
	}
	return b.history()
}

func TestSlowReleaseLateDelIsService(t *testing.T) {
	for _, bite := range []int{3, 60} {
		t.Run(fmt.Sprint(bite), func(t *testing.T) {
			h := slowRelease(100, bite) // bite 60: the unreduced check ran out of its 10s
			for _, skip := range []bool{false, true} {
				r := CheckHistory(h, Options{SkipVisualization: skip}).Result
				if r.LockCheck.Result != string(porcupine.Illegal) {
					t.Fatalf("skip=%v: lock check %s, want Illegal", skip, r.LockCheck.Result)
				}
				if r.Verdict != Unsafe || r.ViolationClass == nil || *r.ViolationClass != ServiceClass || r.ServiceViolations == 0 {
					t.Fatalf("skip=%v: verdict %s class %v svc %d first %+v", skip, r.Verdict, r.ViolationClass, r.ServiceViolations, r.FirstViolation)
				}
			}
		})
	}
}

// randomLockHistory builds a small random history of acquires and releases by a few clients,
// with every kind of outcome: ok, fail, info, and no completion at all.
func randomLockHistory(rng *rand.Rand, n int) *history.History {
	ttls := []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond}
	b := newHB("random", ttls[rng.IntN(len(ttls))])
	clients := 2 + rng.IntN(3)
	next := make([]float64, clients)
	for range n {
		c := rng.IntN(clients)
		call := next[c] + float64(rng.IntN(20))
		ret := call + 0.5 + float64(rng.IntN(15))
		st := []history.Type{history.TypeOk, history.TypeOk, history.TypeOk, history.TypeInfo, history.TypeFail}[rng.IntN(5)]
		if rng.IntN(12) == 0 {
			st = "" // no completion: this client is done
		}
		a := b.op(history.OpAcquire, c+1, 0, call, st, ret, nil, "")
		if st == "" {
			next[c] = 1e9
			continue
		}
		next[c] = ret
		// Release what was granted, and now and then what was not known to be.
		if st == history.TypeOk || (st == history.TypeInfo && rng.IntN(3) == 0) {
			rc := ret + float64(rng.IntN(15))
			rr := rc + 0.5 + float64(rng.IntN(10))
			rst := []history.Type{history.TypeOk, history.TypeOk, history.TypeInfo, history.TypeFail}[rng.IntN(4)]
			if rng.IntN(12) == 0 {
				rst = ""
			}
			b.op(history.OpRelease, c+1, a, rc, rst, rr, nil, "")
			next[c] = rr
			if rst == "" {
				next[c] = 1e9
			}
		}
	}
	return b.history()
}

// The reductions of lockHistory (unknown acquires nobody releases left out, unknown releases
// capped where their acquisition can no longer hold the lock) and its cutting into chunks never
// change porcupine's answer, nor where the checker locates an illegal grant porcupine proved.
func TestLockReductionsKeepAnswer(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	seen := map[porcupine.CheckResult]int{}
	reduced, chunked, waiters, located := 0, 0, 0, 0
	for i := range 2500 {
		h := randomLockHistory(rng, 4+rng.IntN(7+i%2*6))
		r := newRun(h.Run(), Options{})
		raw, parts := r.lockHistoryOf(false, 0)
		want := porcupine.CheckOperationsTimeout(lockModel(parts), raw, 10*time.Second)
		if want == porcupine.Unknown {
			t.Fatalf("%d: the unreduced check timed out\n%+v", i, raw)
		}
		seen[want]++
		where := map[bool]Violation{} // located in one piece, with and without the reductions
		if want == porcupine.Illegal {
			for _, reduce := range []bool{false, true} {
				r.lockOps, r.lockParts = r.lockHistoryOf(reduce, 0)
				where[reduce] = r.porcupineGrantViolation(nil)
			}
		}
		for _, c := range []struct {
			reduce bool
			chunk  int
		}{{true, 0}, {false, 1}, {true, 1}, {true, 3}} {
			red, redParts := r.lockHistoryOf(c.reduce, c.chunk)
			got := porcupine.CheckOperationsTimeout(lockModel(redParts), red, 10*time.Second)
			if got != want {
				t.Fatalf("%d %+v: %s, unreduced and in one piece %s\nraw %+v\nreduced %+v", i, c, got, want, raw, red)
			}
			if c.reduce && c.chunk == 0 && (len(red) != len(raw) || fmt.Sprint(red) != fmt.Sprint(raw)) {
				reduced++
			}
			if c.chunk == 1 && redParts > parts {
				chunked++
				if slices.ContainsFunc(red, func(o porcupine.Operation) bool { return o.Input.(lockInput).kind == lockInit }) {
					waiters++
				}
			}
			if want == porcupine.Illegal {
				r.lockOps, r.lockParts = red, redParts
				if w := r.porcupineGrantViolation(nil); w.B.ID != where[c.reduce].B.ID {
					t.Fatalf("%d %+v: located at acq %d, in one piece at acq %d\nraw %+v\nreduced %+v", i, c, w.B.ID, where[c.reduce].B.ID, raw, red)
				}
				located++
			}
		}
	}
	if seen[porcupine.Ok] < 200 || seen[porcupine.Illegal] < 200 || reduced < 300 || chunked < 300 || waiters < 10 {
		t.Fatalf("too few interesting cases: %v, %d reduced, %d chunked (%d with waiters)", seen, reduced, chunked, waiters)
	}
	t.Logf("answers %v, %d histories reduced, %d cut into chunks (%d with waiters), %d locations compared", seen, reduced, chunked, waiters, located)
}

// The same on generated contended histories (clients waiting in acquire while another holds the
// lock, as in real runs), with and without an injected violation: cut into chunks of any size,
// the lock check gives the answer and the location it gives in one piece.
func TestLockChunksKeepAnswerContended(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	seen := map[porcupine.CheckResult]int{}
	waiters := 0
	for i := range 300 {
		cfg := genConfig{Clients: 2 + rng.IntN(8), Ops: 40 + rng.IntN(300), TTL: time.Duration(1+rng.IntN(5)) * time.Millisecond,
			Seed: rng.Uint64(), Inject: inject(rng.IntN(3)), Noise: rng.IntN(2) == 0}
		cfg.InjectAt = rng.IntN(cfg.Ops / 4)
		r := newRun(generate(cfg).Run(), Options{})
		whole, parts := r.lockHistoryOf(true, 0)
		want := porcupine.CheckOperationsTimeout(lockModel(parts), whole, 10*time.Second)
		if want == porcupine.Unknown {
			t.Fatalf("%d %+v: the check in one piece timed out", i, cfg)
		}
		seen[want]++
		var where Violation
		if want == porcupine.Illegal {
			r.lockOps, r.lockParts = whole, parts
			where = r.porcupineGrantViolation(nil)
		}
		for _, size := range []int{1, 2, 7, 40} {
			h, n := r.lockHistoryOf(true, size)
			if size == 1 && slices.ContainsFunc(h, func(o porcupine.Operation) bool { return o.Input.(lockInput).kind == lockInit }) {
				waiters++
			}
			if got := porcupine.CheckOperationsTimeout(lockModel(n), h, 10*time.Second); got != want {
				t.Fatalf("%d %+v, chunks of %d: %s, in one piece %s", i, cfg, size, got, want)
			}
			if want == porcupine.Illegal {
				r.lockOps, r.lockParts = h, n
				if w := r.porcupineGrantViolation(nil); w.B.ID != where.B.ID || w.A.ID != where.A.ID {
					t.Fatalf("%d %+v, chunks of %d: located at acq %d after %d, in one piece at %d after %d", i, cfg, size, w.B.ID, w.A.ID, where.B.ID, where.A.ID)
				}
			}
		}
	}
	if seen[porcupine.Ok] < 50 || seen[porcupine.Illegal] < 50 || waiters < 100 {
		t.Fatalf("too few interesting cases: %v, %d cut with waiters", seen, waiters)
	}
	t.Logf("answers %v, %d cut with waiters", seen, waiters)
}
