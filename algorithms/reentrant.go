package algorithms

import (
	"context"
	"fmt"
	"time"
)

// Reentrant wraps l so that its owner may acquire it again while holding it; each Release counts
// one Acquire down, and l itself is released only by the Release that matches the first Acquire.
//
// The owner is the wrapper: one Reentrant value stands for one client (a process, or a chain of
// calls in it), as the owner of Curator's InterProcessMutex (seed 001) is a thread, and the count
// is kept by the client, as Curator keeps it, not on the server. Go has no goroutine identity, so
// every goroutine that shares a wrapper is the same owner; two owners need two wrappers, each
// over its own Locker. Calls on one wrapper are serialised: an Acquire while another call of the
// same wrapper is in flight waits for it (or for its ctx), then re-enters if that one acquired.
//
// A nested Acquire talks to no server: it returns the held lease with its Validity cut to what is
// left of it by the owner's clock (docs/design.md#the-lock-interface: validity counts from the moment Acquire was called),
// so a careful caller's check still works inside nested sections. When nothing is left, the lock
// may already be someone else's: the nested Acquire fails with ErrNotHeld and counts nothing.
// The lease the server enforces is not extended by re-entering (l is any Locker, with no renew).
func Reentrant(l Locker) Locker { return ReentrantWithClock(l, SystemClock{}) }

// ReentrantWithClock is Reentrant with the owner's clock, which measures what is left of a lease.
func ReentrantWithClock(l Locker, clock Clock) Locker {
	r := &reentrant{inner: l, clock: clock, sem: make(chan struct{}, 1)}
	r.sem <- struct{}{}
	return r
}

type reentrant struct {
	inner Locker
	clock Clock
	// sem holds one token while no call runs: whoever takes it may read and change the state
	// below, and may wait for the inner lock without blocking a caller whose ctx ends.
	sem   chan struct{}
	depth int       // Acquires not yet released; 0 = not held
	lease Lease     // the inner lease, while depth > 0
	start time.Time // when the first Acquire was called, by clock
}

func (r *reentrant) enter(ctx context.Context) error {
	select {
	case <-r.sem:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("reentrant: %w", ctx.Err())
	}
}

func (r *reentrant) leave() { r.sem <- struct{}{} }

// Acquire acquires the inner lock when the owner does not hold it, and re-enters when it does.
func (r *reentrant) Acquire(ctx context.Context) (Lease, error) {
	if err := r.enter(ctx); err != nil {
		return Lease{}, err
	}
	defer r.leave()
	if r.depth > 0 {
		lease := r.lease
		if lease.Validity > 0 {
			left := lease.Validity - r.clock.Now().Sub(r.start)
			if left <= 0 {
				return Lease{}, fmt.Errorf("reentrant acquire: the held lease's validity ran out: %w", ErrNotHeld)
			}
			lease.Validity = left
		}
		r.depth++
		return lease, nil
	}
	start := r.clock.Now()
	lease, err := r.inner.Acquire(ctx)
	if err != nil {
		// An unknown outcome may have left the inner lock held: nobody will release it but its
		// expiry, as for any Locker whose Acquire failed that way.
		return Lease{}, err
	}
	r.depth, r.lease, r.start = 1, lease, start
	return lease, nil
}

// Release counts one Acquire down; the last one releases the inner lock with the inner lease.
// The lease passed in is not used: every nested lease stands for the same inner one. A Release
// without a matching Acquire returns ErrNotHeld.
func (r *reentrant) Release(ctx context.Context, _ Lease) error {
	if err := r.enter(ctx); err != nil {
		return err
	}
	defer r.leave()
	if r.depth == 0 {
		return fmt.Errorf("reentrant release without acquire: %w", ErrNotHeld)
	}
	r.depth--
	if r.depth > 0 {
		return nil
	}
	lease := r.lease
	r.lease = Lease{}
	return r.inner.Release(ctx, lease)
}

// Close closes the inner Locker when it holds connections.
func (r *reentrant) Close() error {
	if c, ok := r.inner.(Closer); ok {
		return c.Close()
	}
	return nil
}

func newTokenReentrant(cfg Config) (Locker, error) {
	cfg = cfg.withDefaults()
	l, err := newToken(cfg)
	if err != nil {
		return nil, fmt.Errorf("token+reentrant: %w", err)
	}
	return ReentrantWithClock(l, cfg.Clock), nil
}

func init() {
	Register(Info{
		Name:       "token+reentrant",
		Summary:    "token wrapped by Reentrant: the holder may acquire again; the last Release deletes the key.",
		Source:     "seed 001 (a lock should be reentrant; Curator's InterProcessMutex counts re-entries per thread in its LockData)",
		Topologies: []string{topoRedisSingle, topoRedisSentinel},
		Points:     []string{"acquire:after-set", "release:before-del"},
		New:        newTokenReentrant,
	})
}
