package algorithms_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
	"github.com/redis/go-redis/v9"
)

// countingLock is an in-memory Locker that counts the calls Reentrant makes on it.
type countingLock struct {
	mu                 sync.Mutex
	held               bool
	acquires, releases int
	validity           time.Duration
}

func (l *countingLock) Acquire(context.Context) (algorithms.Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		return algorithms.Lease{}, errors.New("countingLock: acquired twice by the wrapper")
	}
	l.held = true
	l.acquires++
	return algorithms.Lease{Validity: l.validity, TTL: l.validity, Data: l.acquires}, nil
}

func (l *countingLock) Release(_ context.Context, lease algorithms.Lease) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lease.Data != l.acquires {
		return errors.New("countingLock: released with another lease")
	}
	l.held = false
	l.releases++
	return nil
}

func (l *countingLock) counts() (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acquires, l.releases
}

// fakeClock is a Clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestReentrantCounts(t *testing.T) {
	ctx := context.Background()
	inner := &countingLock{validity: time.Second}
	clock := &fakeClock{now: time.Unix(1000, 0)}
	r := algorithms.ReentrantWithClock(inner, clock)

	var leases []algorithms.Lease
	for i := range 3 {
		lease, err := r.Acquire(ctx)
		if err != nil {
			t.Fatalf("Acquire %d: %v", i+1, err)
		}
		leases = append(leases, lease)
		clock.add(100 * time.Millisecond)
	}
	if a, rel := inner.counts(); a != 1 || rel != 0 {
		t.Fatalf("after 3 Acquires the inner lock saw %d acquires, %d releases; want 1, 0", a, rel)
	}
	// A nested lease is the held one, with what is left of its validity.
	if got := leases[2].Validity; got != 800*time.Millisecond {
		t.Errorf("third lease's Validity %v, want 800ms (1s minus the 200ms since the first Acquire)", got)
	}
	if leases[2].Data != leases[0].Data || leases[2].TTL != time.Second {
		t.Errorf("nested lease %+v does not stand for the held one %+v", leases[2], leases[0])
	}
	for i := 2; i >= 0; i-- {
		if err := r.Release(ctx, leases[i]); err != nil {
			t.Fatalf("Release %d: %v", i+1, err)
		}
		_, rel := inner.counts()
		if want := map[bool]int{true: 1, false: 0}[i == 0]; rel != want {
			t.Fatalf("after Release %d the inner lock saw %d releases, want %d", 3-i, rel, want)
		}
	}
	if err := r.Release(ctx, leases[0]); !errors.Is(err, algorithms.ErrNotHeld) {
		t.Errorf("Release without Acquire: %v, want ErrNotHeld", err)
	}

	// A new first Acquire takes the inner lock again.
	if _, err := r.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if a, _ := inner.counts(); a != 2 {
		t.Errorf("inner acquires %d, want 2", a)
	}
}

func TestReentrantExpiredLease(t *testing.T) {
	ctx := context.Background()
	inner := &countingLock{validity: time.Second}
	clock := &fakeClock{now: time.Unix(1000, 0)}
	r := algorithms.ReentrantWithClock(inner, clock)
	lease, err := r.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clock.add(time.Second)
	if _, err := r.Acquire(ctx); !errors.Is(err, algorithms.ErrNotHeld) {
		t.Fatalf("nested Acquire after the validity ran out: %v, want ErrNotHeld", err)
	}
	// The failed nested Acquire counted nothing: one Release gives the inner lock back.
	if err := r.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if _, rel := inner.counts(); rel != 1 {
		t.Errorf("inner releases %d, want 1", rel)
	}
}

// blockingLock's Acquire waits until ctx ends.
type blockingLock struct{ countingLock }

func (l *blockingLock) Acquire(ctx context.Context) (algorithms.Lease, error) {
	<-ctx.Done()
	return algorithms.Lease{}, ctx.Err()
}

// TestReentrantWaitHonoursCtx: a call that waits for another call of the same owner still ends
// with its own ctx.
func TestReentrantWaitHonoursCtx(t *testing.T) {
	r := algorithms.Reentrant(&blockingLock{})
	first, cancelFirst := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Acquire(first)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second Acquire while the first waits: %v, want DeadlineExceeded", err)
	}
	cancelFirst()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("first Acquire: %v, want Canceled", err)
	}
}

// TestReentrantRedis runs token+reentrant against a real redis-server: a nested Acquire does not
// deadlock, a nested Release does not delete the key, another client cannot get the lock until
// the last Release, and then it can.
func TestReentrantRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 2})
	r := direct(t, c, 0)
	a := newLocker(t, c, "token+reentrant", 1, "reentrant", opts{ttl: 5 * time.Second})
	b := newLocker(t, c, "token+reentrant", 2, "reentrant", opts{ttl: 5 * time.Second})

	value := func() string {
		v, err := r.Get(context.Background(), "reentrant").Result()
		if errors.Is(err, redis.Nil) {
			return ""
		}
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		return v
	}

	outer := acquire(t, a, 5*time.Second)
	token := value()
	if token == "" {
		t.Fatal("no key after the first Acquire")
	}
	// Nested: must return at once (no deadlock on its own key).
	nested := []algorithms.Lease{acquire(t, a, 500*time.Millisecond), acquire(t, a, 500*time.Millisecond)}
	if v := value(); v != token {
		t.Fatalf("nested Acquire changed the key: %q, was %q", v, token)
	}
	for i, l := range nested {
		if err := a.Release(context.Background(), l); err != nil {
			t.Fatalf("nested Release %d: %v", i+1, err)
		}
		if v := value(); v != token {
			t.Fatalf("nested Release %d released early: key %q, want %q", i+1, v, token)
		}
		mustWait(t, b, 200*time.Millisecond)
	}
	if err := a.Release(context.Background(), outer); err != nil {
		t.Fatalf("last Release: %v", err)
	}
	if v := value(); v != "" {
		t.Fatalf("key %q still there after the last Release", v)
	}
	lb := acquire(t, b, time.Second)
	if err := b.Release(context.Background(), lb); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(context.Background(), outer); !errors.Is(err, algorithms.ErrNotHeld) {
		t.Errorf("a Release too many: %v, want ErrNotHeld", err)
	}
}
