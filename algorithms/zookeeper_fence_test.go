package algorithms_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

func TestZooKeeperFence(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.ZooKeeper, Nodes: 1, Clients: 3, Proxies: true})
	const session = 2 * time.Second

	t.Run("handover", func(t *testing.T) {
		a := newLocker(t, c, "zookeeper+fence", 1, "handover", opts{ttl: session})
		b := newLocker(t, c, "zookeeper+fence", 2, "handover", opts{ttl: session})
		checkHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
			if l.Fence == 0 || l.Validity != 0 || l.TTL != session {
				t.Errorf("lease %+v, want a fence, Validity 0, TTL = session timeout %v", l, session)
			}
		})
	})

	t.Run("fence-increases", func(t *testing.T) {
		a := newLocker(t, c, "zookeeper+fence", 1, "fences", opts{ttl: session})
		b := newLocker(t, c, "zookeeper+fence", 2, "fences", opts{ttl: session})
		increasing(t, 6, a, b)
		// A waiter's node is older than the holder's release, yet its zxid is above the holder's.
		la := acquire(t, a, 5*time.Second)
		got := make(chan algorithms.Lease, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			lb, err := b.Acquire(ctx)
			if err != nil {
				t.Errorf("B Acquire: %v", err)
			}
			got <- lb
		}()
		time.Sleep(200 * time.Millisecond)
		if err := a.Release(context.Background(), la); err != nil {
			t.Fatal(err)
		}
		lb := <-got
		if lb.Fence <= la.Fence {
			t.Errorf("waiter's fence %d not above the holder's %d", lb.Fence, la.Fence)
		}
		if err := b.Release(context.Background(), lb); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("points", func(t *testing.T) {
		info, _ := algorithms.Lookup("zookeeper+fence")
		if !info.Fenced {
			t.Error("zookeeper+fence is not Fenced")
		}
		rec := &recorder{}
		l := newLocker(t, c, "zookeeper+fence", 3, "points", opts{ttl: session, point: rec.point})
		acquireRelease(t, l)
		if got := rec.names(); !slices.Equal(got, info.Points) {
			t.Fatalf("points called %q, Info.Points %q", got, info.Points)
		}
	})
}
