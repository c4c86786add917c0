package algorithms_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

func TestRedsync(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisMulti, Nodes: 3, Clients: 3, Proxies: true})
	ctx := context.Background()
	const ttl = 5 * time.Second

	t.Run("handover", func(t *testing.T) {
		a := newLocker(t, c, "redsync", 1, "handover", opts{ttl: ttl})
		b := newLocker(t, c, "redsync", 2, "handover", opts{ttl: ttl})
		la := acquire(t, a, 5*time.Second)
		// Until = call + expiry − elapsed − 1% drift.
		if la.Validity <= ttl*98/100 || la.Validity >= ttl || la.TTL != ttl || la.Fence != 0 {
			t.Errorf("lease %+v, want Validity just under TTL = %v, no fence", la, ttl)
		}
		for i := range 3 {
			if d := pttl(t, direct(t, c, i), "handover"); d <= 0 || d > ttl {
				t.Errorf("node %d: PTTL %v, want in (0, %v]", i+1, d, ttl)
			}
		}
		// Not checkHandOver's mustWait: on a loaded machine a try cut off by redsync's per-try
		// timeout (5% of the expiry) leaves its outcome unknown, rightly.
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := b.Acquire(wctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("B's Acquire under a held lock: %v, want it to end with ctx", err)
		}
		if err := a.Release(ctx, la); err != nil {
			t.Fatalf("A Release: %v", err)
		}
		lb := acquire(t, b, 5*time.Second)
		if err := b.Release(ctx, lb); err != nil {
			t.Fatalf("B Release: %v", err)
		}
	})

	t.Run("expired-release", func(t *testing.T) {
		a := newLocker(t, c, "redsync", 1, "expired", opts{ttl: 300 * time.Millisecond})
		la := acquire(t, a, time.Second)
		time.Sleep(400 * time.Millisecond)
		if err := a.Release(ctx, la); !errors.Is(err, algorithms.ErrNotHeld) {
			t.Errorf("Release of an expired lease: %v, want ErrNotHeld", err)
		}
	})

	t.Run("minority-down", func(t *testing.T) {
		if err := c.Kill(ctx, "redis-3"); err != nil {
			t.Fatal(err)
		}
		a := newLocker(t, c, "redsync", 1, "minority", opts{ttl: ttl})
		la := acquire(t, a, 3*time.Second) // 2 of 3
		if err := a.Release(ctx, la); err != nil {
			t.Fatalf("Release on 2 of 3: %v", err)
		}
		if err := c.Kill(ctx, "redis-2"); err != nil {
			t.Fatal(err)
		}
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := a.Acquire(actx)
		if !errors.Is(err, context.DeadlineExceeded) || algorithms.IsUnknown(err) {
			t.Fatalf("Acquire on 1 of 3 (dead nodes refuse): %v, want a definite ctx end", err)
		}
	})
}
