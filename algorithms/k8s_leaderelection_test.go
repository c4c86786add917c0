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

// TestK8sLeaderElection runs client-go's elector against a real kube-apiserver: a handover, and
// the mechanism of kubernetes #23731 — a leader cut off from the apiserver stops leading after
// its renew deadline (its Valid turns false), while IsLeader(), which the mutant trusts, stays
// true because the elector observes no new record.
func TestK8sLeaderElection(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.Kubernetes, Clients: 3, Proxies: true})
	ctx := context.Background()
	ttl := 2 * time.Second

	t.Run("handover", func(t *testing.T) {
		a := newLocker(t, c, "k8s-leaderelection-release", 1, "handover", opts{ttl: ttl})
		b := newLocker(t, c, "k8s-leaderelection-release", 2, "handover", opts{ttl: ttl})
		checkHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
			if l.Validity != 0 || l.TTL != ttl {
				t.Errorf("lease %+v, want Validity 0 (held until released) and TTL 2s (the LeaseDuration)", l)
			}
		})
	})

	for _, tc := range []struct {
		alg       string
		validLate bool
	}{{"k8s-leaderelection", false}, {"k8s-leaderelection-ignore-stopped", true}} {
		t.Run("cut-off/"+tc.alg, func(t *testing.T) {
			l := newLocker(t, c, tc.alg, 3, "cut-"+tc.alg, opts{ttl: ttl})
			lease := acquire(t, l, 10*time.Second)
			v := l.(algorithms.Validator)
			if !v.Valid(lease) {
				t.Fatal("not valid right after the acquire")
			}
			link, err := c.Link(3, "kube-apiserver-1")
			if err != nil {
				t.Fatal(err)
			}
			link.Stop() // connections closed, new ones refused: no renewal gets through
			defer func() {
				if err := link.Start(); err != nil {
					t.Error(err)
				}
			}()
			// RenewDeadline is 1.5 s, its first try up to a RetryPeriod (0.3 s) after the last
			// success: the elector gives up within 1.8 s.
			time.Sleep(2500 * time.Millisecond)
			if got := v.Valid(lease); got != tc.validLate {
				t.Errorf("Valid 2.5 s after the cut = %v, want %v", got, tc.validLate)
			}
			if err := l.Release(ctx, lease); !errors.Is(err, algorithms.ErrNotHeld) {
				t.Errorf("Release after the elector stopped leading = %v, want ErrNotHeld", err)
			}
		})
	}
}
