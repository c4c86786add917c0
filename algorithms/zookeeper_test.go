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

func TestZooKeeper(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.ZooKeeper, Nodes: 1, Clients: 3, Proxies: true})
	ctx := context.Background()
	const session = 2 * time.Second

	t.Run("handover", func(t *testing.T) {
		a := newLocker(t, c, "zookeeper", 1, "handover", opts{ttl: session})
		b := newLocker(t, c, "zookeeper", 2, "handover", opts{ttl: session})
		checkHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
			if l.TTL != session || l.Validity != 0 || l.Fence != 0 {
				t.Errorf("lease %+v, want TTL = session timeout %v, Validity 0 (held until released), no fence", l, session)
			}
		})
		// Again, now that B's timed-out waits left nodes to clean up.
		checkHandOver(t, b, a, nil)
	})

	t.Run("holder-session-closed", func(t *testing.T) {
		a := newLocker(t, c, "zookeeper", 1, "closed", opts{ttl: session})
		b := newLocker(t, c, "zookeeper", 2, "closed", opts{ttl: session})
		la := acquire(t, a, 5*time.Second)
		got := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			lb, err := b.Acquire(ctx)
			if err == nil {
				err = b.Release(ctx, lb)
			}
			got <- err
		}()
		time.Sleep(200 * time.Millisecond)
		t0 := time.Now()
		if err := a.(algorithms.Closer).Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := <-got; err != nil {
			t.Fatalf("waiter after the holder's session closed: %v", err)
		}
		// Closing ends the session at once: no wait for the session timeout.
		if d := time.Since(t0); d > session {
			t.Errorf("waiter got the lock %v after the holder closed, want well under the session timeout", d)
		}
		if err := a.Release(ctx, la); !errors.Is(err, algorithms.ErrNotHeld) {
			t.Errorf("Release after the session closed: %v, want ErrNotHeld", err)
		}
	})

	t.Run("session-expiry", func(t *testing.T) {
		const st = time.Second
		a := newLocker(t, c, "zookeeper", 1, "expiry", opts{ttl: st})
		b := newLocker(t, c, "zookeeper", 2, "expiry", opts{ttl: st})
		la := acquire(t, a, 5*time.Second)
		link, err := c.Link(1, c.Nodes()[0].Name)
		if err != nil {
			t.Fatal(err)
		}
		link.Stop() // A is cut off: its session expires on the server after st
		t0 := time.Now()
		lb := acquire(t, b, 10*time.Second)
		if d := time.Since(t0); d < st/2 {
			t.Errorf("B got the lock %v after A was cut off, before A's session could expire", d)
		}
		if err := link.Start(); err != nil {
			t.Fatal(err)
		}
		// A learns of the expiry when it reconnects; until then its release fails (no server)
		// or is unknown (sent, no answer). It never succeeds: the node died with the session.
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := a.Release(ctx, la)
			if errors.Is(err, algorithms.ErrNotHeld) {
				break
			}
			if err == nil || time.Now().After(deadline) {
				t.Fatalf("Release after the session expired: %v, want ErrNotHeld", err)
			}
			t.Logf("release while reconnecting: %v (unknown %v)", err, algorithms.IsUnknown(err))
			time.Sleep(200 * time.Millisecond)
		}
		if err := b.Release(ctx, lb); err != nil {
			t.Fatal(err)
		}
		// A works again, in its new session.
		if err := a.Release(ctx, acquire(t, a, 5*time.Second)); err != nil {
			t.Fatalf("Release in the new session: %v", err)
		}
	})

	t.Run("points", func(t *testing.T) {
		info, _ := algorithms.Lookup("zookeeper")
		rec := &recorder{}
		l := newLocker(t, c, "zookeeper", 3, "points", opts{ttl: session, point: rec.point})
		if err := l.Release(ctx, acquire(t, l, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := rec.names(); !slices.Equal(got, info.Points) {
			t.Fatalf("points called %q, Info.Points %q", got, info.Points)
		}

		rec = &recorder{failAt: "acquire:after-create"}
		l = newLocker(t, c, "zookeeper", 3, "abort-create", opts{ttl: session, point: rec.point})
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := l.Acquire(actx); !errors.Is(err, errBoom) || !algorithms.IsUnknown(err) {
			t.Fatalf("Acquire stopped after create: %v, want the point's error, unknown", err)
		}

		rec = &recorder{failAt: "release:before-delete"}
		a := newLocker(t, c, "zookeeper", 1, "abort-delete", opts{ttl: session, point: rec.point})
		la := acquire(t, a, 5*time.Second)
		if err := a.Release(ctx, la); !errors.Is(err, errBoom) {
			t.Fatalf("Release: %v, want the point's error", err)
		}
		// The node was not deleted: the lock is still held.
		b := newLocker(t, c, "zookeeper", 2, "abort-delete", opts{ttl: session})
		mustWait(t, b, 300*time.Millisecond)
	})
}
