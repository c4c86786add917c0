package userlocks

// Redlock written as a user writes it from the Redis distlock page (the Redlock algorithm) with
// go-redis: one redis.NewClient per independent master, SetNX on all of them in parallel, each
// bounded by an op timeout; the lock is held when a majority set the key and TTL − elapsed −
// drift is still positive; otherwise every node is unlocked and the client tries again after a
// random delay. Release runs the Lua compare-and-delete on every node. No Config.Point.
// The NoValidity twin drops antirez's "elapsed < TTL − drift" check.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/redis/go-redis/v9"
)

// userRedlockUnlock is the distlock page's release script.
const userRedlockUnlock = `if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end`

type userRedlock struct {
	cfg    algorithms.Config
	name   string
	nodes  []*redis.Client
	quorum int
	bug    Bug
	mu     sync.Mutex // guards cfg.Rand
}

// NewRedlock builds the lock for one client over the masters of cfg.Addrs.
func NewRedlock(cfg algorithms.Config, bug Bug) (algorithms.Locker, error) {
	name := "redlock"
	if cfg.Clock == nil {
		cfg.Clock = algorithms.SystemClock{}
	}
	if cfg.Name == "" {
		cfg.Name = "lock"
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = max(cfg.TTL/10, 5*time.Millisecond)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(uint64(cfg.Client), 0x726c6f636b))
	}
	if cfg.Sentinel != nil {
		return nil, fmt.Errorf("%s: needs independent masters, not Sentinel", name)
	}
	if len(cfg.Addrs) == 0 || cfg.TTL <= 0 {
		return nil, fmt.Errorf("%s: needs Redis addresses and a TTL", name)
	}
	l := &userRedlock{cfg: cfg, name: name, quorum: len(cfg.Addrs)/2 + 1, bug: bug}
	for _, a := range cfg.Addrs {
		l.nodes = append(l.nodes, redis.NewClient(&redis.Options{
			Addr:   a,
			Dialer: cfg.Dial,
			// Never retry: a retried SET NX would find our own key and say "taken".
			MaxRetries:            -1,
			DialTimeout:           cfg.OpTimeout,
			ReadTimeout:           cfg.OpTimeout,
			WriteTimeout:          cfg.OpTimeout,
			ContextTimeoutEnabled: true,
		}))
	}
	return l, nil
}

// Close closes the clients of every node.
func (l *userRedlock) Close() error {
	var errs []error
	for _, n := range l.nodes {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}

// userRedlockErr sorts a failed command that may have changed a node's key: an error reply, a
// failed dial or a closed client are definite; a timeout or a broken connection is unknown.
func userRedlockErr(op string, err error) error {
	var rerr redis.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &rerr),
		errors.As(err, &oe) && oe.Op == "dial",
		errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout):
		return fmt.Errorf("%s: %w", op, err)
	}
	return &algorithms.UnknownError{Op: op, Err: err}
}

type userRedlockReply struct {
	ok  bool  // SET took, or the script deleted
	err error // nil, definite or *UnknownError
}

// all runs f on every node at once, each under its own OpTimeout; the caller's deadline does not
// cut a command off (its outcome would be unknown).
func (l *userRedlock) all(ctx context.Context, f func(context.Context, *redis.Client) (bool, error)) []userRedlockReply {
	ctx = context.WithoutCancel(ctx)
	out := make([]userRedlockReply, len(l.nodes))
	var wg sync.WaitGroup
	for i, n := range l.nodes {
		wg.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, l.cfg.OpTimeout)
			defer cancel()
			ok, err := f(nctx, n)
			if err != nil {
				err = fmt.Errorf("%s: %w", l.cfg.Addrs[i], err)
			}
			out[i] = userRedlockReply{ok, err}
		})
	}
	wg.Wait()
	return out
}

func (l *userRedlock) lock(ctx context.Context, token string) []userRedlockReply {
	return l.all(ctx, func(c context.Context, n *redis.Client) (bool, error) {
		ok, err := n.SetNX(c, l.cfg.Name, token, l.cfg.TTL).Result()
		if err != nil {
			return false, userRedlockErr("SET NX PX", err)
		}
		return ok, nil
	})
}

func (l *userRedlock) unlock(ctx context.Context, token string) []userRedlockReply {
	return l.all(ctx, func(c context.Context, n *redis.Client) (bool, error) {
		d, err := n.Eval(c, userRedlockUnlock, []string{l.cfg.Name}, token).Int64()
		if err != nil {
			return false, userRedlockErr("EVAL compare-and-delete", err)
		}
		return d == 1, nil
	})
}

// Acquire tries for a majority until it holds one with time left, or ctx ends.
func (l *userRedlock) Acquire(ctx context.Context) (algorithms.Lease, error) {
	called := l.cfg.Clock.Now()
	l.mu.Lock()
	token := fmt.Sprintf("%d-%016x%016x", l.cfg.Client, l.cfg.Rand.Uint64(), l.cfg.Rand.Uint64())
	l.mu.Unlock()
	drift := l.cfg.TTL/100 + 2*time.Millisecond
	// maybe[i]: node i may still hold our token (its SET took or is unknown, and the unlock did
	// not answer). If a majority may, giving up is not a definite failure.
	maybe := make([]bool, len(l.nodes))
	var lastErr error
	for {
		if err := ctx.Err(); err != nil {
			err = fmt.Errorf("%s acquire: %w", l.name, errors.Join(err, lastErr))
			n := 0
			for _, m := range maybe {
				if m {
					n++
				}
			}
			if n >= l.quorum {
				return algorithms.Lease{}, &algorithms.UnknownError{Op: l.name + " acquire (a majority may hold our token)", Err: err}
			}
			return algorithms.Lease{}, err
		}
		t0 := l.cfg.Clock.Now()
		res := l.lock(ctx, token)
		votes := 0
		var errs []error
		for _, r := range res {
			if r.ok {
				votes++
			}
			if r.err != nil {
				errs = append(errs, r.err)
			}
		}
		lastErr = errors.Join(errs...)
		now := l.cfg.Clock.Now()
		if votes >= l.quorum {
			if l.bug == NoValidity {
				// TTL − drift from the quorum; Validity counts from the call.
				return algorithms.Lease{Validity: now.Sub(called) + l.cfg.TTL - drift, TTL: l.cfg.TTL, Data: token}, nil
			}
			if validity := l.cfg.TTL - now.Sub(t0) - drift; validity > 0 {
				// What is left at now, counted from the call: (t0 − call) + TTL − drift.
				return algorithms.Lease{Validity: now.Sub(called) + validity, TTL: l.cfg.TTL, Data: token}, nil
			}
		}
		for i, u := range l.unlock(ctx, token) {
			switch {
			case u.err == nil:
				maybe[i] = false
			case res[i].ok || algorithms.IsUnknown(res[i].err):
				maybe[i] = true
			}
		}
		l.mu.Lock()
		delay := 5*time.Millisecond + time.Duration(l.cfg.Rand.Int64N(int64(15*time.Millisecond)))
		l.mu.Unlock()
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// Release runs the compare-and-delete on every node: nil when a majority deleted our token,
// algorithms.ErrNotHeld when every node answered and fewer did, an unknown error when a delete's outcome is
// unknown or the release took effect on some nodes only.
func (l *userRedlock) Release(ctx context.Context, lease algorithms.Lease) error {
	token, ok := lease.Data.(string)
	if !ok {
		return fmt.Errorf("%s release: lease has no token (Data %T)", l.name, lease.Data)
	}
	deleted, unknown := 0, false
	var errs []error
	for _, r := range l.unlock(ctx, token) {
		if r.ok {
			deleted++
		}
		if r.err != nil {
			errs = append(errs, r.err)
			unknown = unknown || algorithms.IsUnknown(r.err)
		}
	}
	switch {
	case deleted >= l.quorum:
		return nil
	case unknown || (deleted > 0 && len(errs) > 0):
		return &algorithms.UnknownError{Op: l.name + " release", Err: errors.Join(errs...)}
	case len(errs) > 0:
		return fmt.Errorf("%s release: %w", l.name, errors.Join(errs...))
	}
	return algorithms.ErrNotHeld
}
