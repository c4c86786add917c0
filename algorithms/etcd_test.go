package algorithms_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

func TestEtcd(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.Etcd, Nodes: 3, Clients: 3, Proxies: true})
	ctx := context.Background()

	t.Run("handover", func(t *testing.T) {
		// 1.5 s rounds up to a 2 s session: leases are whole seconds.
		a := newLocker(t, c, "etcd", 1, "handover", opts{ttl: 1500 * time.Millisecond})
		b := newLocker(t, c, "etcd", 2, "handover", opts{ttl: 1500 * time.Millisecond})
		checkHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
			if l.Fence == 0 || l.Validity != 0 || l.TTL != 2*time.Second {
				t.Errorf("lease %+v, want a fence, Validity 0 (held until released), TTL 2s", l)
			}
		})
		// Again, the other way: B's timed-out wait cleaned up after itself.
		checkHandOver(t, b, a, nil)
	})

	t.Run("fence-increases", func(t *testing.T) {
		a := newLocker(t, c, "etcd", 1, "fences", opts{ttl: time.Second})
		b := newLocker(t, c, "etcd", 2, "fences", opts{ttl: time.Second})
		increasing(t, 6, a, b)
		// A waiter queued before the release still gets a larger fence.
		la := acquire(t, a, 5*time.Second)
		got := make(chan algorithms.Lease, 1)
		go func() {
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			lb, err := b.Acquire(actx)
			if err != nil {
				t.Errorf("B Acquire: %v", err)
			}
			got <- lb
		}()
		time.Sleep(200 * time.Millisecond)
		if err := a.Release(ctx, la); err != nil {
			t.Fatal(err)
		}
		lb := <-got
		if lb.Fence <= la.Fence {
			t.Errorf("waiter's fence %d not above the holder's %d", lb.Fence, la.Fence)
		}
		if err := b.Release(ctx, lb); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("lease-expiry", func(t *testing.T) {
		// A is cut off from every member: its session's lease expires on the server after
		// about its TTL and B is granted while A still believes it holds (Jepsen etcd 3.4.3).
		a := newLocker(t, c, "etcd", 1, "expiry", opts{ttl: time.Second})
		b := newLocker(t, c, "etcd", 2, "expiry", opts{ttl: time.Second})
		la := acquire(t, a, 5*time.Second)
		for _, n := range c.Nodes() {
			link, err := c.Link(1, n.Name)
			if err != nil {
				t.Fatal(err)
			}
			link.Stop()
			t.Cleanup(func() { _ = link.Start() })
		}
		t0 := time.Now()
		lb := acquire(t, b, 10*time.Second)
		d := time.Since(t0)
		t.Logf("B granted %v after A was cut off", d.Round(time.Millisecond))
		if d < time.Second/2 {
			t.Errorf("B got the lock %v after A was cut off, before A's lease could expire", d)
		}
		if lb.Fence <= la.Fence {
			t.Errorf("B's fence %d not above A's %d", lb.Fence, la.Fence)
		}
		for _, n := range c.Nodes() {
			link, _ := c.Link(1, n.Name)
			if err := link.Start(); err != nil {
				t.Fatal(err)
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		err := a.Release(rctx, la)
		t.Logf("A's release after expiry: %v", err)
		if !errors.Is(err, algorithms.ErrNotHeld) && !algorithms.IsUnknown(err) {
			t.Errorf("A's Release after its lease expired: %v, want ErrNotHeld (or unknown while reconnecting)", err)
		}
		if err := b.Release(ctx, lb); err != nil {
			t.Fatalf("B Release: %v", err)
		}
		// A gets a new session and the lock again, once its gRPC connection is back (gRPC's
		// reconnect backoff can take seconds after the links return).
		var err2 error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var l algorithms.Lease
			l, err2 = a.Acquire(actx)
			cancel()
			if err2 == nil {
				if err := a.Release(ctx, l); err != nil {
					t.Fatalf("A's Release of its new lease: %v", err)
				}
				break
			}
		}
		if err2 != nil {
			t.Fatalf("A never got the lock again after its links returned: %v", err2)
		}
	})

	t.Run("points", func(t *testing.T) {
		info, _ := algorithms.Lookup("etcd")
		rec := &recorder{}
		l := newLocker(t, c, "etcd", 3, "points", opts{ttl: time.Second, point: rec.point})
		acquireRelease(t, l)
		if got := rec.names(); !slices.Equal(got, info.Points) {
			t.Fatalf("points called %q, Info.Points %q", got, info.Points)
		}
	})
}
