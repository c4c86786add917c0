package algorithms

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// bsmLocker is github.com/bsm/redislock as its README uses it: redislock.New over a go-redis
// client, Obtain(ctx, key, ttl, opts) — SET key <random> NX PX ttl in a Lua script — retried
// with a RetryStrategy (LinearBackoff of RetryDelay, bounded by the acquire's ctx, as the
// package's "Obtain with retry" example bounds it by a count), and Release — the Lua
// compare-and-delete.
//
// The plain form holds a lease of TTL counted from the Obtain call (the library returns no
// validity; the caller asked for TTL), and its careful holder asks the library as its README
// does before it writes: lock.TTL(ctx) > 0 ("Yay, I still have my lock!"). TTL is the library's
// Lua GET-compare-then-PTTL: 0 once the key is gone or holds another client's token, which is
// how the holder learns of a key lost to a restart or a failover. Unlike the other Validators,
// Valid here is a request to the server (bounded by OpTimeout; an error or a timeout is "not
// held"), because that is the only way the library offers; the remaining time is counted down by
// the time the answer took.
//
// The refresh form (bsm-redislock-refresh) keeps its lease alive as the README's "Extend my
// lock" does, from a goroutine: lock.Refresh(ctx, TTL) every TTL/3 (the Lua compare-and-PEXPIRE)
// until Release, giving the lease up at the first Refresh that fails or is not answered. Its
// Validity is 0 (until released); Valid is true while no Refresh failed and the last answered
// one was sent less than TTL − drift ago, by the client's clock — as token+watchdog, in the
// library's own calls.
//
// The library reads time.Now and crypto/rand (its tokens), not the client's Clock and seeded
// source, so its runs are reproducible in their faults but not to the token. It offers no hook
// between its steps, so it calls no points. A go-redis hook on the client's own connection only
// watches: it marks each Obtain script as an attempt (MarkAttempt) and notes whether the one
// that ended Obtain may have reached the server (an unknown outcome); it changes nothing sent.
type bsmLocker struct {
	cfg     Config
	rdb     *redis.Client
	lc      *redislock.Client
	refresh bool

	dogs watchdogs[*redislock.Lock] // the refresh form's loops, by lock
}

// bsmAcquireKey marks the context of an Obtain, for the hook: its value is the *bool the hook
// sets when a script of that Obtain ended with an unknown outcome.
type bsmAcquireKey struct{}

func newBsmRedislock(cfg Config) (Locker, error) { return newBsm(cfg, "bsm-redislock", false) }
func newBsmRedislockRefresh(cfg Config) (Locker, error) {
	return newBsm(cfg, "bsm-redislock-refresh", true)
}

func newBsm(cfg Config, name string, refresh bool) (Locker, error) {
	cfg = cfg.withDefaults()
	if cfg.Sentinel == nil && len(cfg.Addrs) != 1 {
		return nil, fmt.Errorf("%s: want one Redis address or a Sentinel config, got %d addresses", name, len(cfg.Addrs))
	}
	addr := ""
	if len(cfg.Addrs) > 0 {
		addr = cfg.Addrs[0]
	}
	rdb := newRedisClient(cfg, addr, cfg.OpTimeout)
	rdb.AddHook(bsmHook{})
	return &bsmLocker{cfg: cfg, rdb: rdb, lc: redislock.New(rdb), refresh: refresh}, nil
}

func (l *bsmLocker) drift() time.Duration { return l.cfg.TTL/100 + 2*time.Millisecond }

func (l *bsmLocker) name() string {
	if l.refresh {
		return "bsm-redislock-refresh"
	}
	return "bsm-redislock"
}

// Acquire is Obtain with a LinearBackoff retry strategy, until ctx ends.
func (l *bsmLocker) Acquire(ctx context.Context) (Lease, error) {
	unknown := new(bool)
	sent := l.cfg.Clock.Now()
	lock, err := l.lc.Obtain(context.WithValue(ctx, bsmAcquireKey{}, unknown), l.cfg.Name, l.cfg.TTL,
		&redislock.Options{RetryStrategy: redislock.LinearBackoff(l.cfg.RetryDelay)})
	if err != nil {
		err = fmt.Errorf("%s obtain: %w", l.name(), err)
		if *unknown {
			// Obtain stops at the first failed request: that one may have set our token.
			return Lease{}, &UnknownError{Op: l.name() + " obtain", Err: err}
		}
		return Lease{}, err
	}
	if !l.refresh {
		return Lease{Validity: l.cfg.TTL, TTL: l.cfg.TTL, Data: lock}, nil
	}
	// The Obtain's last script was sent no earlier than the call: the first lease runs from it.
	l.dogs.start(lock, sent.Add(l.cfg.TTL-l.drift()), l.cfg.TTL/3, func() (time.Time, bool) { return l.refreshOnce(lock) })
	return Lease{TTL: l.cfg.TTL, Data: lock}, nil
}

// refreshOnce calls lock.Refresh, every TTL/3 from the lock's watchdog: the lease then holds
// until the call's time + TTL − drift.
func (l *bsmLocker) refreshOnce(lock *redislock.Lock) (time.Time, bool) {
	sent := l.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.OpTimeout)
	defer cancel()
	return sent.Add(l.cfg.TTL - l.drift()), lock.Refresh(ctx, l.cfg.TTL, nil) == nil
}

// Valid: the refresh form answers from its loop's state; the plain form asks lock.TTL.
func (l *bsmLocker) Valid(lease Lease) bool {
	lock, ok := lease.Data.(*redislock.Lock)
	if !ok {
		return false
	}
	if l.refresh {
		return l.dogs.holds(lock, l.cfg.Clock.Now())
	}
	sent := l.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.OpTimeout)
	defer cancel()
	left, err := lock.TTL(ctx)
	return err == nil && left-l.cfg.Clock.Now().Sub(sent) > l.drift()
}

// Release stops the refresh loop, then calls lock.Release: ErrNotHeld for the library's
// ErrLockNotHeld (the key is gone or another client's).
func (l *bsmLocker) Release(ctx context.Context, lease Lease) error {
	lock, ok := lease.Data.(*redislock.Lock)
	if !ok {
		return fmt.Errorf("%s release: lease has no lock (Data %T)", l.name(), lease.Data)
	}
	l.dogs.stop(lock)
	err := lock.Release(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redislock.ErrLockNotHeld):
		return ErrNotHeld
	}
	return redisWriteErr(l.name()+" release", err)
}

// Close stops every refresh loop and closes the client's connections.
func (l *bsmLocker) Close() error {
	l.dogs.stopAll()
	return l.rdb.Close()
}

// bsmHook watches the scripts of an Obtain (the only requests made with its context).
type bsmHook struct{}

func (bsmHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (bsmHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (bsmHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		unknown, obtain := ctx.Value(bsmAcquireKey{}).(*bool)
		obtain = obtain && strings.HasPrefix(cmd.Name(), "eval")
		if obtain {
			MarkAttempt(ctx) // Obtain sends its next script only after the last one was answered
		}
		err := next(ctx, cmd)
		if obtain && err != nil && !errors.Is(err, redis.Nil) && !redisDefinite(err) {
			*unknown = true
		}
		return err
	}
}

func init() {
	Register(Info{
		Name: "bsm-redislock",
		Summary: "github.com/bsm/redislock: Obtain (SET NX PX in Lua) with a LinearBackoff retry, Release (Lua " +
			"compare-and-delete); the holder checks lock.TTL > 0 before it writes, as the README does.",
		Source:     "github.com/bsm/redislock v0.9.4",
		Topologies: []string{topoRedisSingle, topoRedisSentinel},
		New:        newBsmRedislock,
	})
	Register(Info{
		Name: "bsm-redislock-refresh",
		Summary: "github.com/bsm/redislock kept alive by lock.Refresh every TTL/3 from a goroutine; the holder " +
			"gives the lease up at the first Refresh that fails.",
		Source:       "github.com/bsm/redislock v0.9.4",
		Topologies:   []string{topoRedisSingle, topoRedisSentinel},
		RenewsPerTTL: 1.0 / 3,
		New:          newBsmRedislockRefresh,
	})
}
