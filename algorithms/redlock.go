package algorithms

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redlockLocker is the Redlock algorithm (seed 003's RedLock PHP class and the Redis distlock
// page) over N independent masters, one per address:
//
//	t0 ──SET key token NX PX ttl on every node (in parallel, short per-node timeout)──> n ok
//	n ≥ N/2+1 and validity = TTL − (now − t0) − drift > 0  ──> held for validity
//	otherwise ──compare-and-delete on every node, sleep rand[d/2, 3d/2)──> next attempt
//
// with drift = TTL·0.01 + 2 ms. One token serves every attempt of an Acquire (as in the PHP
// class). Release runs the compare-and-delete script on every node.
//
// How it fails: the lease lives on a bare majority of nodes without fsync or monotonic clocks.
// A node of that majority that restarts empty, or jumps its clock past the TTL, lets a second
// client build a majority through it while the first still validly holds (docs/design.md#catalogue-and-expectations restart and
// clock-jump, service class, Kleppmann's "How to do distributed locking"); a paused holder writes
// after its validity (client-pause). It survives the loss of a minority of nodes (node-kill).
type redlockLocker struct {
	cfg     Config
	nodes   []*redis.Client
	quorum  int
	timeout time.Duration // per node request
	mu      sync.Mutex    // guards cfg.Rand
	// noValidity drops the "elapsed < TTL − drift" check: the holder counts TTL − drift from the
	// moment it has its quorum (the redlock-no-validity mutant).
	noValidity bool
}

func newRedlock(cfg Config) (Locker, error) { return newRedlockLocker(cfg) }

func newRedlockLocker(cfg Config) (*redlockLocker, error) {
	cfg = cfg.withDefaults()
	if cfg.Sentinel != nil {
		return nil, errors.New("redlock: needs independent masters, not Sentinel")
	}
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("redlock: no Redis addresses")
	}
	l := &redlockLocker{
		cfg:     cfg,
		quorum:  len(cfg.Addrs)/2 + 1,
		timeout: max(min(cfg.OpTimeout, cfg.TTL/10), 5*time.Millisecond),
	}
	for _, a := range cfg.Addrs {
		l.nodes = append(l.nodes, newRedisClient(cfg, a, l.timeout))
	}
	return l, nil
}

// Close closes the connections to every node.
func (l *redlockLocker) Close() error {
	var errs []error
	for _, n := range l.nodes {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}

type nodeResult struct {
	ok  bool  // the SET took or the script deleted
	err error // nil, definite, or *UnknownError
}

// each runs f on every node in parallel, each under its own timeout and not cut off by ctx
// (see redisBase.op).
func (l *redlockLocker) each(ctx context.Context, f func(context.Context, *redis.Client) (bool, error)) []nodeResult {
	ctx = context.WithoutCancel(ctx)
	res := make([]nodeResult, len(l.nodes))
	var wg sync.WaitGroup
	for i, n := range l.nodes {
		wg.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, l.timeout)
			defer cancel()
			ok, err := f(nctx, n)
			if err != nil {
				err = fmt.Errorf("node %d (%s): %w", i+1, l.cfg.Addrs[i], err)
			}
			res[i] = nodeResult{ok, err}
		})
	}
	wg.Wait()
	return res
}

func (l *redlockLocker) delay() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.cfg.RetryDelay
	return d/2 + time.Duration(l.cfg.Rand.Int64N(max(int64(d), 1)))
}

// Acquire tries for a majority until it holds one with time left, or ctx ends.
func (l *redlockLocker) Acquire(ctx context.Context) (Lease, error) {
	start := l.cfg.Clock.Now()
	l.mu.Lock()
	tok := randomToken(l.cfg)
	l.mu.Unlock()
	drift := l.cfg.TTL/100 + 2*time.Millisecond
	// maybe[i]: node i may still hold our token after a failed attempt's cleanup. If a majority
	// may, the service may have granted us the lock, so giving up is not a definite failure.
	maybe := make([]bool, len(l.nodes))
	var last []nodeResult
	for {
		if err := ctx.Err(); err != nil {
			return Lease{}, l.giveUp(err, maybe, last)
		}
		if !slices.Contains(maybe, true) {
			// No earlier round's key may still count: the grant, if any, is this round's.
			MarkAttempt(ctx)
		}
		t0 := l.cfg.Clock.Now()
		last = l.each(ctx, func(c context.Context, n *redis.Client) (bool, error) {
			return setNXPX(c, n, l.cfg.Name, tok, l.cfg.TTL)
		})
		n := 0
		for _, r := range last {
			if r.ok {
				n++
			}
		}
		if n >= l.quorum {
			if err := l.cfg.Point(ctx, "acquire:after-quorum"); err != nil {
				return Lease{}, stoppedHolding("acquire:after-quorum", err)
			}
			now := l.cfg.Clock.Now()
			if l.noValidity {
				// No check, and TTL − drift counted from now; Validity is from the call.
				return Lease{Validity: now.Sub(start) + l.cfg.TTL - drift, TTL: l.cfg.TTL, Data: tok}, nil
			}
			validity := l.cfg.TTL - now.Sub(t0) - drift
			if validity > 0 {
				return Lease{Validity: t0.Sub(start) + validity, TTL: l.cfg.TTL, Data: tok}, nil
			}
		}
		unlock := l.each(ctx, func(c context.Context, n *redis.Client) (bool, error) {
			return casDel(c, n, l.cfg.Name, tok)
		})
		for i, u := range unlock {
			switch {
			case u.err == nil:
				maybe[i] = false
			case last[i].ok || IsUnknown(last[i].err):
				maybe[i] = true
			}
		}
		t := time.NewTimer(l.delay())
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

func (l *redlockLocker) giveUp(cause error, maybe []bool, last []nodeResult) error {
	var errs []error
	n := 0
	for i := range maybe {
		if maybe[i] {
			n++
		}
		if last != nil && last[i].err != nil {
			errs = append(errs, last[i].err)
		}
	}
	err := fmt.Errorf("redlock acquire: %w", cause)
	if len(errs) > 0 {
		err = fmt.Errorf("redlock acquire: %w (last attempt: %w)", cause, errors.Join(errs...))
	}
	if n >= l.quorum {
		return &UnknownError{Op: "redlock acquire (a majority may still hold our token)", Err: err}
	}
	return err
}

// Release runs compare-and-delete on every node. It returns nil when a majority deleted our
// token, ErrNotHeld when every node answered and fewer than a majority held it, and otherwise the
// nodes' errors (unknown if any delete's outcome is).
func (l *redlockLocker) Release(ctx context.Context, lease Lease) error {
	tok, ok := lease.Data.(string)
	if !ok {
		return fmt.Errorf("redlock release: lease has no token (Data %T)", lease.Data)
	}
	if err := l.cfg.Point(ctx, "release:before-del"); err != nil {
		return stopped("release:before-del", err)
	}
	res := l.each(ctx, func(c context.Context, n *redis.Client) (bool, error) {
		return casDel(c, n, l.cfg.Name, tok)
	})
	deleted, unknown := 0, false
	var errs []error
	for _, r := range res {
		if r.ok {
			deleted++
		}
		if r.err != nil {
			errs = append(errs, r.err)
			unknown = unknown || IsUnknown(r.err)
		}
	}
	switch {
	case deleted >= l.quorum:
		return nil
	case unknown || (deleted > 0 && len(errs) > 0):
		// Some nodes' keys are gone and others' are not known to be: the release took effect
		// in part, which is not "definitely no effect" (measured: a release that deleted on the
		// live nodes while redis-1 was killed, recorded as failed, made the next grant look
		// illegal in 1 of 20 node-kill runs).
		return &UnknownError{Op: "redlock release", Err: errors.Join(errs...)}
	case len(errs) > 0:
		return fmt.Errorf("redlock release: %w", errors.Join(errs...))
	}
	return ErrNotHeld
}

func init() {
	Register(Info{
		Name:        "redlock",
		ReferenceOn: []string{"redis-multi"},
		Summary:     "Redlock over N independent masters: quorum N/2+1, validity = TTL − elapsed − drift, release on all.",
		Source:      "seed 003 (RedLock PHP class) and the Redis distlock page (redis.io)",
		Topologies:  []string{topoRedisMulti},
		Points:      []string{"acquire:after-quorum", "release:before-del"},
		New:         newRedlock,
	})
}
