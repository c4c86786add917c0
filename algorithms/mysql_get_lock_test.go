package algorithms_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

func TestMysqlGetLock(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.MariaDB, Clients: 3, Proxies: true})
	ctx := context.Background()

	t.Run("handover", func(t *testing.T) {
		a := newLocker(t, c, "mysql-get-lock", 1, "handover", opts{ttl: time.Second})
		b := newLocker(t, c, "mysql-get-lock", 2, "handover", opts{ttl: time.Second})
		checkHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
			if l.Fence != 0 || l.Validity != 0 || l.TTL != 0 || !l.NoExpiry {
				t.Errorf("lease %+v, want no fence, Validity 0, TTL 0 and NoExpiry (held while the session lives)", l)
			}
			if !a.(algorithms.Validator).Valid(l) {
				t.Errorf("Valid is false for a lock just taken")
			}
		})
		checkHandOver(t, b, a, nil)
	})

	t.Run("release-twice", func(t *testing.T) {
		a := newLocker(t, c, "mysql-get-lock", 1, "twice", opts{ttl: time.Second})
		la := acquire(t, a, 5*time.Second)
		if err := a.Release(ctx, la); err != nil {
			t.Fatal(err)
		}
		if err := a.Release(ctx, la); !errors.Is(err, algorithms.ErrNotHeld) {
			t.Errorf("second Release = %v, want ErrNotHeld (RELEASE_LOCK NULL: no such lock)", err)
		}
	})

	t.Run("long-name", func(t *testing.T) {
		name := strings.Repeat("n", 100)
		a := newLocker(t, c, "mysql-get-lock", 1, name, opts{ttl: time.Second})
		b := newLocker(t, c, "mysql-get-lock", 2, name, opts{ttl: time.Second})
		checkHandOver(t, a, b, nil)
	})

	// The server ends the holder's session: the waiter is granted at once, the holder learns it
	// only by asking (Valid), and the no-valid mutant does not ask.
	for _, tc := range []struct {
		alg       string
		wantValid bool
	}{{"mysql-get-lock", false}, {"mysql-get-lock-no-valid", true}} {
		t.Run("session-kill/"+tc.alg, func(t *testing.T) {
			checkSessionKill(t, c, tc.alg, "mysql-get-lock", tc.wantValid)
		})
	}
}
