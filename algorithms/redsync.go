package algorithms

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// redsyncLocker is github.com/go-redsync/redsync/v4 as teams deploy it: one go-redis v9 pool per
// independent master, and per acquire NewMutex(name, WithExpiry(TTL)) with every other option at
// its default: 32 tries, a random 50–250 ms delay between them, drift factor 0.01, and a per-try
// timeout of 5% of the expiry for the SET NX on all nodes (25 ms for the catalogue's 500 ms TTL).
// LockContext and UnlockContext make Acquire and Release honour ctx. It is Redlock (redlock.go)
// in a popular library, so it fails where Redlock does.
//
// The library reads time.Now, not Config.Clock (a clock-skew fault cannot reach it), draws its
// tokens from crypto/rand and its retry delays from math/rand's global source, so unlike the
// other algorithms its runs are not reproducible to the token. It offers no hook between its
// steps, so it calls no points.
//
// The pools are the client's own (proxied) addresses through the shared go-redis constructor:
// no command retries, every request bounded by OpTimeout (and by redsync's per-try timeout). A
// thin wrapper around each pool only watches what redsync does, to tell a definite failure (no
// majority can hold our token) from an unknown one; it changes nothing redsync sends.
type redsyncLocker struct {
	cfg     Config
	clients []*redis.Client
	rs      *redsync.Redsync
	quorum  int

	mu    sync.Mutex
	maybe []bool // maybe[i]: node i may hold the token of the acquire in progress
	value string // that token
}

func newRedsync(cfg Config) (Locker, error) {
	cfg = cfg.withDefaults()
	if cfg.Sentinel != nil {
		return nil, errors.New("redsync: needs independent masters, not Sentinel")
	}
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("redsync: no Redis addresses")
	}
	l := &redsyncLocker{cfg: cfg, quorum: len(cfg.Addrs)/2 + 1, maybe: make([]bool, len(cfg.Addrs))}
	pools := make([]rsredis.Pool, len(cfg.Addrs))
	for i, a := range cfg.Addrs {
		c := newRedisClient(cfg, a, cfg.OpTimeout)
		l.clients = append(l.clients, c)
		pools[i] = &watchedPool{Pool: goredis.NewPool(c), node: i, l: l}
	}
	l.rs = redsync.New(pools...)
	return l, nil
}

// Close closes the connections to every node.
func (l *redsyncLocker) Close() error {
	var errs []error
	for _, c := range l.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Acquire is mutex.LockContext. Validity is what redsync's Until promises, measured from the call.
func (l *redsyncLocker) Acquire(ctx context.Context) (Lease, error) {
	l.mu.Lock()
	clear(l.maybe)
	l.value = ""
	l.mu.Unlock()
	start := time.Now() // redsync's own clock
	m := l.rs.NewMutex(l.cfg.Name, redsync.WithExpiry(l.cfg.TTL))
	err := m.LockContext(ctx)
	if err == nil {
		return Lease{Validity: max(m.Until().Sub(start), time.Nanosecond), TTL: l.cfg.TTL, Data: m}, nil
	}
	err = fmt.Errorf("redsync acquire: %w", err)
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%w)", err, ctx.Err()) // redsync says only ErrFailed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, mb := range l.maybe {
		if mb {
			n++
		}
	}
	if n >= l.quorum {
		return Lease{}, &UnknownError{Op: "redsync acquire (a majority may still hold our token)", Err: err}
	}
	return Lease{}, err
}

// Release is mutex.UnlockContext: nil when a majority deleted our token, ErrNotHeld when every
// node answered and fewer did, otherwise the nodes' errors (unknown when a delete may have been
// cut off).
func (l *redsyncLocker) Release(ctx context.Context, lease Lease) error {
	m, ok := lease.Data.(*redsync.Mutex)
	if !ok {
		return fmt.Errorf("redsync release: lease has no mutex (Data %T)", lease.Data)
	}
	held, err := m.UnlockContext(ctx)
	if held {
		return nil
	}
	unknown, answered := false, true
	for _, e := range joined(err) {
		var re *redsync.RedisError
		if errors.As(e, &re) {
			answered = false
			unknown = unknown || !redisDefinite(re.Err)
		}
	}
	switch {
	case unknown:
		return &UnknownError{Op: "redsync release", Err: err}
	case !answered:
		return fmt.Errorf("redsync release: %w", err)
	}
	return ErrNotHeld
}

// joined returns the errors an errors.Join put together (redsync joins one per node).
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// watchedPool passes everything through to redsync's go-redis pool and notes, per node, whether
// the token of the acquire in progress may be on it.
type watchedPool struct {
	rsredis.Pool
	node int
	l    *redsyncLocker
}

func (p *watchedPool) Get(ctx context.Context) (rsredis.Conn, error) {
	c, err := p.Pool.Get(ctx)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, p: p}, nil
}

type watchedConn struct {
	rsredis.Conn
	p *watchedPool
}

// SetNX is the acquire's write: a success, or an error that may have reached the server, leaves
// our token possibly on the node.
func (c *watchedConn) SetNX(name, value string, expiry time.Duration) (bool, error) {
	ok, err := c.Conn.SetNX(name, value, expiry)
	l := c.p.l
	l.mu.Lock()
	if l.value == "" || l.value == value {
		l.value = value
		if ok || (err != nil && !redisDefinite(err)) {
			l.maybe[c.p.node] = true
		}
	}
	l.mu.Unlock()
	return ok, err
}

// Eval is the compare-and-delete (redsync runs no other script here): any answer means our
// token is not on the node any more.
func (c *watchedConn) Eval(script *rsredis.Script, keysAndArgs ...any) (any, error) {
	v, err := c.Conn.Eval(script, keysAndArgs...)
	if err == nil && len(keysAndArgs) == 2 {
		l := c.p.l
		l.mu.Lock()
		if keysAndArgs[1] == l.value {
			l.maybe[c.p.node] = false
		}
		l.mu.Unlock()
	}
	return v, err
}

func init() {
	Register(Info{
		Name:       "redsync",
		Summary:    "github.com/go-redsync/redsync/v4 (Redlock) with its default options over independent masters.",
		Source:     "github.com/go-redsync/redsync/v4 v4.18.1",
		Topologies: []string{topoRedisMulti},
		New:        newRedsync,
	})
}

// redsyncValidLocker is redsync whose holder checks its lock with Mutex.ValidContext before it
// writes — the check redsync added for antirez's step 3 ("Providing a 'check' to ensure a lock is
// still valid prior to writing", PR #42) and deprecated after issue #72 — instead of Until:
// Validity is 0, so the harness's careful client trusts Valid alone. Valid GETs the key on every
// node and says true when a majority hold our token; the GETs are answered when they reach the
// nodes, so replies that come back late say the lock was held when they were read, not that it
// still is (issue #72: "it is possibility that the last node needs 10 seconds to respond").
//
// With until set (redsync-valid-until), the holder asks Valid and then compares the clock with
// Until once the answer is in, the check issue #72 asks for (`time.Now().Before(until)`), kept
// after Valid so that a key deleted behind the holder's back is seen too (issue #72's later
// comments). Valid asks the servers (bounded by OpTimeout, go-redis's read timeout), as a
// session lock's Validator does (algorithms.Validator).
type redsyncValidLocker struct {
	*redsyncLocker
	until bool
}

func newRedsyncValid(until bool) func(Config) (Locker, error) {
	return func(cfg Config) (Locker, error) {
		l, err := newRedsync(cfg)
		if err != nil {
			return nil, err
		}
		return &redsyncValidLocker{redsyncLocker: l.(*redsyncLocker), until: until}, nil
	}
}

// Acquire is redsync's; without until the lease's Validity is dropped: the holder trusts Valid.
func (l *redsyncValidLocker) Acquire(ctx context.Context) (Lease, error) {
	lease, err := l.redsyncLocker.Acquire(ctx)
	if err == nil && !l.until {
		lease.Validity = 0
	}
	return lease, err
}

// Valid is Mutex.ValidContext (deprecated in v4.18.1, still exported and documented as "returns
// true if the lock acquired through m is still valid"); with until, also time.Now() < Until().
func (l *redsyncValidLocker) Valid(lease Lease) bool {
	m, ok := lease.Data.(*redsync.Mutex)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(l.cfg.OpTimeout, 50*time.Millisecond))
	defer cancel()
	valid, _ := m.ValidContext(ctx) //nolint:staticcheck // the deprecated check is what is tested
	if valid && l.until {
		valid = time.Now().Before(m.Until())
	}
	return valid
}

func init() {
	Register(Info{
		Name:       "redsync-valid",
		Summary:    "redsync whose holder checks Mutex.Valid() (a majority of GETs) before it writes, not Until (go-redsync/redsync #72).",
		Source:     "github.com/go-redsync/redsync/v4 v4.18.1 Mutex.ValidContext; go-redsync/redsync#72",
		Topologies: []string{topoRedisMulti},
		New:        newRedsyncValid(false),
	})
	Register(Info{
		Name:       "redsync-valid-until",
		Summary:    "redsync whose holder checks Mutex.Valid() and then time.Now() < Until() before it writes (the check go-redsync/redsync #72 asks for).",
		Source:     "github.com/go-redsync/redsync/v4 v4.18.1 Mutex.ValidContext and Until; go-redsync/redsync#72",
		Topologies: []string{topoRedisMulti},
		New:        newRedsyncValid(true),
	})
}
