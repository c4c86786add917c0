package algorithms_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
)

func TestRedsync(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Spec{Topology: cluster.RedisMulti, Nodes: 3, Clients: 3, Proxies: true})
	ctx := context.Background()
	const ttl = 5 * time.Second

	t.Run("handover", func(t *testing.T) {
		a := newLocker(t, c, "redsync", 1, "handover", opts{ttl: ttl})
		b := newLocker(t, c, "redsync", 2, "handover", opts{ttl: ttl})
		checkHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
			// Until = call + expiry − elapsed − 1% drift.
			if l.Validity <= ttl*98/100 || l.Validity >= ttl || l.TTL != ttl || l.Fence != 0 {
				t.Errorf("lease %+v, want Validity just under TTL = %v, no fence", l, ttl)
			}
			for i := range 3 {
				if d := pttl(t, direct(t, c, i), "handover"); d <= 0 || d > ttl {
					t.Errorf("node %d: PTTL %v, want in (0, %v]", i+1, d, ttl)
				}
			}
		})
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
