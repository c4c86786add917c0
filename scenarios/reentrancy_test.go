package scenarios_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/locktest"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/redis/go-redis/v9"
)

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietRedis{}) // the probe dialer's refused dials under faults are expected
	os.Exit(m.Run())
}

// TestReentrantColumn: token+reentrant is expected to do exactly what token does, everywhere.
func TestReentrantColumn(t *testing.T) {
	for _, s := range scenarios.All() {
		want, err := s.Cell("token")
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Cell("token+reentrant")
		if err != nil {
			t.Fatal(err)
		}
		if got.Expected != want.Expected || got.NA != want.NA || got.Topology != want.Topology {
			t.Errorf("%s: token+reentrant expects %q (n/a %q, on %q), token %q (n/a %q, on %q)", s.Name,
				got.Expected, got.NA, got.Topology, want.Expected, want.NA, want.Topology)
		}
	}
}

// nesting re-enters the lock it holds inside every acquisition: Acquire takes the lock, then
// acquires and releases it depth more times, as a locked function calling another locked function
// would, and only then hands the lease to the critical section. If a nested Release let the lock
// go, the critical section runs unlocked and the checker sees another client granted meanwhile; if
// a nested Acquire waited for the lock its owner holds, the run is stuck.
type nesting struct {
	algorithms.Locker
	depth int
}

func (n nesting) Acquire(ctx context.Context) (algorithms.Lease, error) {
	outer, err := n.Locker.Acquire(ctx)
	if err != nil {
		return outer, err
	}
	for range n.depth {
		inner, err := n.Locker.Acquire(ctx)
		if err != nil {
			_ = n.Locker.Release(ctx, outer)
			return algorithms.Lease{}, err
		}
		if err := n.Locker.Release(ctx, inner); err != nil {
			return algorithms.Lease{}, err
		}
	}
	return outer, nil
}

func (n nesting) Close() error {
	if c, ok := n.Locker.(algorithms.Closer); ok {
		return c.Close()
	}
	return nil
}

// uncounted is a broken reentrant wrapper: it lets its owner in again, but any Release gives the
// inner lock back (no count).
type uncounted struct {
	inner algorithms.Locker
	mu    sync.Mutex
	held  bool
	lease algorithms.Lease
}

func (u *uncounted) Acquire(ctx context.Context) (algorithms.Lease, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.held {
		return u.lease, nil
	}
	l, err := u.inner.Acquire(ctx)
	if err == nil {
		u.held, u.lease = true, l
	}
	return l, err
}

func (u *uncounted) Release(ctx context.Context, l algorithms.Lease) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.held = false
	return u.inner.Release(ctx, l)
}

func (u *uncounted) Close() error { return u.inner.(algorithms.Closer).Close() }

// reentrancyFactory builds token locks wrapped by wrap, nested depth times in every acquisition.
func reentrancyFactory(wrap func(algorithms.Locker, algorithms.Config) algorithms.Locker) locktest.Factory {
	return func(cfg algorithms.Config) (algorithms.Locker, error) {
		info, err := algorithms.Lookup("token")
		if err != nil {
			return nil, err
		}
		l, err := info.New(cfg)
		if err != nil {
			return nil, err
		}
		return nesting{Locker: wrap(l, cfg), depth: 2}, nil
	}
}

// TestReentrancy runs re-entry through the whole pipeline (real redis-server, harness, checker):
// Reentrant stays safe and live with every acquisition nested three deep, also when releases are
// late; a wrapper that does not count its Releases is caught.
func TestReentrancy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real redis-server")
	}
	t.Run("Reentrant", func(t *testing.T) {
		locktest.Run(t, reentrancyFactory(func(l algorithms.Locker, cfg algorithms.Config) algorithms.Locker {
			return algorithms.ReentrantWithClock(l, cfg.Clock)
		}), locktest.WithScenarios("baseline", "slow-release"))
	})
	t.Run("uncounted", func(t *testing.T) {
		locktest.Run(t, reentrancyFactory(func(l algorithms.Locker, _ algorithms.Config) algorithms.Locker {
			return &uncounted{inner: l}
		}), locktest.WithScenarios("baseline"), locktest.WithExpect("baseline", "unsafe"))
	})
}
