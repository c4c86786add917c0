package algorithms_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

// acquireRelease takes the lock once and gives it back, returning its fence.
func acquireRelease(t *testing.T, l algorithms.Locker) uint64 {
	t.Helper()
	lease := acquire(t, l, 5*time.Second)
	if err := l.Release(context.Background(), lease); err != nil {
		t.Fatalf("Release: %v", err)
	}
	return lease.Fence
}

// increasing takes the lock n times, alternating between lockers, and checks that every fence
// is larger than the one before.
func increasing(t *testing.T, n int, ls ...algorithms.Locker) []uint64 {
	t.Helper()
	var fences []uint64
	for i := range n {
		f := acquireRelease(t, ls[i%len(ls)])
		if f == 0 || (len(fences) > 0 && f <= fences[len(fences)-1]) {
			t.Fatalf("fence %d after %v: not increasing", f, fences)
		}
		fences = append(fences, f)
	}
	return fences
}

func TestTokenFence(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 3, Proxies: true})
	r := master(t, c)
	const ttl = 5 * time.Second

	t.Run("handover", func(t *testing.T) {
		a := newLocker(t, c, "token+fence", 1, "handover", opts{ttl: ttl})
		b := newLocker(t, c, "token+fence", 2, "handover", opts{ttl: ttl})
		checkHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
			if l.Fence == 0 || l.Validity != ttl || l.TTL != ttl {
				t.Errorf("lease %+v, want a fence, Validity = TTL = %v", l, ttl)
			}
			if d := pttl(t, r, "handover"); d <= 0 || d > ttl {
				t.Errorf("PTTL %v, want in (0, %v]", d, ttl)
			}
		})
	})

	t.Run("fence-increases", func(t *testing.T) {
		a := newLocker(t, c, "token+fence", 1, "fences", opts{ttl: ttl})
		b := newLocker(t, c, "token+fence", 2, "fences", opts{ttl: ttl})
		fences := increasing(t, 6, a, b)
		if n, err := r.Get(context.Background(), "fences:fence").Uint64(); err != nil || n != fences[len(fences)-1] {
			t.Errorf("counter key = %d, %v; want the last fence %d", n, err, fences[len(fences)-1])
		}
		// A busy attempt takes no number: the next grant is the next integer.
		la := acquire(t, a, time.Second)
		mustWait(t, b, 200*time.Millisecond)
		if err := a.Release(context.Background(), la); err != nil {
			t.Fatal(err)
		}
		if f := acquireRelease(t, b); f != la.Fence+1 {
			t.Errorf("fence after a busy wait = %d, want %d", f, la.Fence+1)
		}
	})

	t.Run("points", func(t *testing.T) {
		info, _ := algorithms.Lookup("token+fence")
		if !info.Fenced {
			t.Error("token+fence is not Fenced")
		}
		rec := &recorder{}
		l := newLocker(t, c, "token+fence", 3, "points", opts{ttl: ttl, point: rec.point})
		acquireRelease(t, l)
		if got := rec.names(); !slices.Equal(got, info.Points) {
			t.Fatalf("points called %q, Info.Points %q", got, info.Points)
		}
	})
}

// TestTokenFenceFailover shows the fence going backwards: the counter lives on the master like
// the lock key, so a replica promoted after replication was cut hands out numbers again.
func TestTokenFenceFailover(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSentinel, Clients: 2, Proxies: true})
	ctx := context.Background()
	const ttl = 20 * time.Second // longer than the failover: A still holds when B is granted
	a := newLocker(t, c, "token+fence", 1, "failover", opts{ttl: ttl})
	b := newLocker(t, c, "token+fence", 2, "failover", opts{ttl: ttl})

	before := increasing(t, 3, a, b)
	old, err := c.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Let the replica catch up, then cut it off.
	if n, err := master(t, c).Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica = %d, %v", n, err)
	}
	link, err := c.ReplicationLink()
	if err != nil {
		t.Fatal(err)
	}
	// Black-hole it as the failover fault does: a closed link would mark the replica as stale
	// (down longer than 10× down-after), and Sentinel would not promote it.
	if _, err := link.Toxics.AddToxicJson(strings.NewReader(`{"name":"cut","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := link.Toxics.AddToxicJson(strings.NewReader(`{"name":"cut-up","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`)); err != nil {
		t.Fatal(err)
	}
	after := increasing(t, 3, a, b)
	held := acquire(t, a, 5*time.Second)
	if held.Fence != after[len(after)-1]+1 {
		t.Fatalf("A's fence %d after %v", held.Fence, after)
	}

	if err := c.Kill(ctx, old); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for {
		m, err := c.Master(ctx)
		if err == nil && m != old {
			break
		}
		if time.Since(t0) > 30*time.Second {
			t.Fatalf("no failover after %v: Master = %q, %v", time.Since(t0), m, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// B's client learns of the new master from Sentinel a little after the promotion; until then
	// its attempts fail definitely (the old master is dead), as the harness's clients see them.
	var lb algorithms.Lease
	for deadline := time.Now().Add(15 * time.Second); ; {
		actx, cancel := context.WithTimeout(ctx, time.Until(deadline))
		lb, err = b.Acquire(actx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B could not acquire after the failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("fences before the cut %v, after %v, A holds %d; after the failover B holds %d", before, after, held.Fence, lb.Fence)
	if lb.Fence != before[len(before)-1]+1 {
		t.Errorf("B's fence after the failover = %d, want %d (the counter as last replicated, plus one)", lb.Fence, before[len(before)-1]+1)
	}
	if lb.Fence >= held.Fence {
		t.Errorf("B's fence %d is not below A's %d: the fence did not go backwards", lb.Fence, held.Fence)
	}
}
