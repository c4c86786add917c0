package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/history"
)

// Named points the harness offers between the steps of the critical section (docs/design.md#the-lock-interface).
const (
	// PointBeforeAcquire is reached before each call of Acquire: where a fault aims at the
	// acquisition itself (the winning reply held on the wire, docs/design.md#wire-points).
	PointBeforeAcquire = "cs:before-acquire"
	PointAcquired      = "cs:acquired"
	// PointBeforeRead is reached once the holder found its lease valid, before it reads: the
	// lock is held and will be used (a grant whose lease ran out while it was waited for is
	// released at once, unused, and never reaches it).
	PointBeforeRead    = "cs:before-read"
	PointBeforeWrite   = "cs:before-write"
	PointBeforeRelease = "cs:before-release"
)

// Points lists the harness's points in the order a client reaches them.
var Points = []string{PointBeforeAcquire, PointAcquired, PointBeforeRead, PointBeforeWrite, PointBeforeRelease}

// HolderSteps are the points between two steps of a holder's critical section: where a holder's
// pause or crash does what the published failures describe (explore surveys them). Of the others,
// cs:before-acquire comes before anything is held, and cs:before-read is cs:acquired past the
// validity check: points to aim a wire fault or end a hold at, not steps of their own.
var HolderSteps = []string{PointAcquired, PointBeforeWrite, PointBeforeRelease}

// client is one worker: acquire → critical section → release → think, until ctx ends.
type client struct {
	id     int
	lock   string
	locker algorithms.Locker
	clock  algorithms.Clock
	point  algorithms.PointFunc
	rng    *rand.Rand
	rec    *recorder
	res    *resource
	w      Workload
	// crashed reports whether a fault killed the client as a reply reached it (a client-crash at a
	// wire point): it runs no further step and records nothing more.
	crashed func() bool
	// calls is the call of the Locker the client is in, for the run to see one overdue.
	calls calls
	// leases hears of every lease the client is granted: faults are sized against the longest.
	leases *leaseSeen
	// inSection is set from a grant until the client's critical section ends (its write done or
	// skipped): the run waits for such a write before it ends (writesDue).
	inSection atomic.Bool
	// fatal ends the run with err (a client that broke its protocol).
	fatal func(err error)
}

// errStop ends the loop: the client crashed or the run is over.
var errStop = errors.New("stop")

func (c *client) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.once(ctx); err != nil {
			return
		}
		if c.w.Think > 0 {
			sleep(ctx, time.Duration(c.rng.Int64N(int64(c.w.Think))+1))
		}
	}
}

// once runs one acquisition. It returns errStop when the client must stop.
func (c *client) once(ctx context.Context) error {
	if err := c.point(ctx, PointBeforeAcquire); err != nil {
		return errStop
	}
	acq := c.rec.invoke(history.Event{Op: history.OpAcquire, Client: c.id, Lock: c.lock})
	start := c.clock.Now()
	actx, cancel := context.WithTimeout(ctx, c.w.AcquireTimeout)
	// When the latest attempt was sent: the winning one, if Acquire succeeds. Atomic, since a
	// user's Locker may mark attempts from its own goroutines.
	var sent atomic.Int64
	actx = algorithms.WithAttemptHook(actx, func() { sent.Store(c.rec.now()) })
	answered := c.calls.begin(fmt.Sprintf("acquire (op %d)", acq), c.w.AcquireTimeout)
	lease, err := c.locker.Acquire(actx)
	answered()
	cancel()
	if c.dead() {
		return errStop // died in the call: its acquire stays open, as a dead process leaves it
	}
	if err != nil {
		if c.broken(acq, err) { // first: a broken client is reported even when the run is ending
			return errStop
		}
		if c.stopped(ctx, err) {
			c.abandon(ctx, acq, err)
			return errStop
		}
		c.rec.complete(acq, outcome(err), history.Event{Error: err.Error()})
		if !algorithms.IsUnknown(err) && !errors.Is(err, context.DeadlineExceeded) {
			// A definite failure (busy, gave up): back off a little before trying again.
			sleep(ctx, 5*time.Millisecond)
		}
		return nil
	}
	if c.leases != nil && lease.TTL > 0 {
		c.leases.saw(lease.TTL)
	}
	ttl := int64(lease.TTL)
	if ttl == 0 && lease.NoExpiry {
		ttl = history.NoTTL
	}
	c.rec.complete(acq, history.TypeOk, history.Event{Fence: lease.Fence,
		ValidityNs: int64(lease.Validity), TTLNs: ttl, SentNs: sent.Load()})

	c.inSection.Store(true)
	err = c.criticalSection(ctx, acq, start, lease)
	c.inSection.Store(false)
	if err != nil {
		return errStop
	}

	rel := c.rec.invoke(history.Event{Op: history.OpRelease, Client: c.id, Lock: c.lock, Acq: acq})
	rctx, cancel := context.WithTimeout(ctx, c.w.ReleaseTimeout)
	answered = c.calls.begin(fmt.Sprintf("release (op %d)", rel), c.w.ReleaseTimeout)
	err = c.locker.Release(rctx, lease)
	answered()
	cancel()
	if c.dead() {
		return errStop
	}
	switch {
	case err == nil:
		c.rec.complete(rel, history.TypeOk, history.Event{})
	case c.broken(rel, err):
		return errStop
	case c.stopped(ctx, err):
		c.abandon(ctx, rel, err)
		return errStop
	case errors.Is(err, algorithms.ErrNotHeld):
		c.rec.complete(rel, history.TypeFail, history.Event{Error: err.Error()})
	default:
		c.rec.complete(rel, outcome(err), history.Event{Error: err.Error()})
	}
	return nil
}

// criticalSection checks the lease by the client's own clock (a careful client), reads the counter,
// holds, checks the lease again, and writes value+1. The pause a fault puts at cs:before-write comes after the check:
// that is the window Kleppmann's GC pause falls into.
func (c *client) criticalSection(ctx context.Context, acq int64, start time.Time, lease algorithms.Lease) error {
	if err := c.point(ctx, PointAcquired); err != nil {
		return err
	}
	if expired(c.clock, start, lease) || !c.valid(lease) {
		// The acquisition took longer than the lease (Redlock's rule: a lock granted too late is
		// not used). A careful client does not touch the resource and releases.
		return c.point(ctx, PointBeforeRelease)
	}
	if err := c.point(ctx, PointBeforeRead); err != nil {
		return err
	}
	rd := c.rec.invoke(history.Event{Op: history.OpRead, Client: c.id, Lock: c.lock, Acq: acq, Fence: lease.Fence})
	v := c.res.read(lease.Fence)
	c.rec.complete(rd, history.TypeOk, history.Event{Value: history.Int64(v)})

	if !sleep(ctx, c.w.Hold) {
		return errStop
	}
	if expired(c.clock, start, lease) || !c.valid(lease) {
		// The lease may have expired: a careful client does not write.
		return c.point(ctx, PointBeforeRelease)
	}
	if err := c.point(ctx, PointBeforeWrite); err != nil {
		return err
	}
	wr := c.rec.invoke(history.Event{Op: history.OpWrite, Client: c.id, Lock: c.lock, Acq: acq,
		Value: history.Int64(v + 1), Fence: lease.Fence})
	if err := c.res.write(v+1, lease.Fence); err != nil {
		c.rec.complete(wr, history.TypeFail, history.Event{Error: err.Error()})
	} else {
		c.rec.complete(wr, history.TypeOk, history.Event{})
	}
	return c.point(ctx, PointBeforeRelease)
}

// expired reports whether the lease may have run out, by the client's own clock, counting from
// the moment Acquire was called. A lease without validity (0) is held until released.
func expired(clock algorithms.Clock, start time.Time, lease algorithms.Lease) bool {
	return lease.Validity > 0 && clock.Now().Sub(start) >= lease.Validity
}

// dead reports whether a fault killed the client during its last call (crashed).
func (c *client) dead() bool { return c.crashed != nil && c.crashed() }

// valid asks a Locker that can tell (algorithms.Validator: a renewing watchdog, a session)
// whether the lease is still held; a Locker that cannot is trusted by its Validity alone.
func (c *client) valid(lease algorithms.Lease) bool {
	v, ok := c.locker.(algorithms.Validator)
	if !ok {
		return true
	}
	defer c.calls.begin("validity check", max(c.w.OpTimeout, time.Second))()
	return v.Valid(lease)
}

// broken ends the run when err says the client broke its protocol (algorithms.ErrBroken): the
// operation's outcome is unknown, and the history so far is kept.
func (c *client) broken(id int64, err error) bool {
	if !errors.Is(err, algorithms.ErrBroken) {
		return false
	}
	c.rec.complete(id, history.TypeInfo, history.Event{Error: err.Error()})
	if c.fatal != nil {
		c.fatal(err)
	}
	return true
}

// stopped reports whether err means the client must stop (crashed at a point, or the run ended)
// rather than an outcome to record.
func (c *client) stopped(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, errCrashed)
}

// abandon records the end of an operation cut short because the run ended: its outcome is
// unknown. A crashed client records nothing: a dead process leaves its operation open forever.
func (c *client) abandon(ctx context.Context, id int64, err error) {
	if errors.Is(err, errCrashed) {
		return
	}
	c.rec.complete(id, history.TypeInfo, history.Event{Error: "run ended: " + err.Error()})
}

// outcome maps an error to fail (definitely not applied) or info (unknown).
func outcome(err error) history.Type {
	if algorithms.IsUnknown(err) {
		return history.TypeInfo
	}
	return history.TypeFail
}

// sleep waits d or until ctx ends; it reports whether the full time passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
