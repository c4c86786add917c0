package checker

import (
	"fmt"
	"math/rand/v2"
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
func randomLockHistory(rng *rand.Rand) *history.History {
	ttls := []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond}
	b := newHB("random", ttls[rng.IntN(len(ttls))])
	clients := 2 + rng.IntN(3)
	n := 4 + rng.IntN(7)
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
// capped where their acquisition can no longer hold the lock) never change porcupine's answer.
func TestLockReductionsKeepAnswer(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	seen := map[porcupine.CheckResult]int{}
	reduced := 0
	for i := range 4000 {
		h := randomLockHistory(rng)
		r := newRun(h, Options{})
		raw, parts := r.lockHistoryOf(false)
		red, _ := r.lockHistoryOf(true)
		want := porcupine.CheckOperationsTimeout(lockModel(parts), raw, 10*time.Second)
		got := porcupine.CheckOperationsTimeout(lockModel(parts), red, 10*time.Second)
		if want == porcupine.Unknown {
			t.Fatalf("%d: the unreduced check timed out", i)
		}
		if got != want {
			t.Fatalf("%d: reduced %s, unreduced %s\nraw %+v\nreduced %+v", i, got, want, raw, red)
		}
		seen[want]++
		if len(red) != len(raw) || fmt.Sprint(red) != fmt.Sprint(raw) {
			reduced++
		}
	}
	if seen[porcupine.Ok] < 200 || seen[porcupine.Illegal] < 200 || reduced < 500 {
		t.Fatalf("too few interesting cases: %v, %d reduced", seen, reduced)
	}
	t.Logf("answers %v, %d histories reduced", seen, reduced)
}
