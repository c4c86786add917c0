package algorithms

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// getsetLocker is seed 000's RedisLockUtil (Java), step for step: the value is the lock's expiry
// time in milliseconds by the client's clock (now + TTL + 1 ms); SETNX it; if the key exists, GET
// it, and if that time has passed by this client's clock, GETSET a new expiry and hold the lock
// only if the old value is the one GET saw (so of several clients finding the same expired
// value, one wins). Unlock: GET, and DEL if the value is still ours (two commands). The key has no
// server-side expiry: the lease lives in the value and only clients enforce it.
//
// Faithful quirks: a GETSET that returns nil (the key was deleted in between) does not take the
// lock, though it has just written it (the seed's "GETSET返回nil" case); a losing GETSET still
// overwrites the winner's expiry with its own (the seed accepts that).
//
// How it fails: the expiry is judged by each client's own clock, so a client whose clock runs
// ahead takes over a lock its holder still validly holds (docs/design.md#catalogue-and-expectations clock-skew, service class,
// seed 000 "时间戳的问题"). The release is check-then-delete: a holder that pauses between its GET
// and its DEL (release:after-get) deletes the lock someone took over meanwhile (slow-release).
// A paused holder writes after its expiry (client-pause). A server clock jump does nothing to it.
type getsetLocker struct {
	*redisBase
	// plainDEL releases by plain DEL, without the GET compare (the getset-no-compare mutant).
	plainDEL bool
	// blindTakeover holds the lock after any GETSET, without comparing the old value with the
	// one GET saw (the getset-blind-takeover mutant).
	blindTakeover bool
}

func newGetSet(cfg Config) (Locker, error) {
	b, err := newRedisBase(cfg)
	if err != nil {
		return nil, fmt.Errorf("getset: %w", err)
	}
	return &getsetLocker{redisBase: b}, nil
}

// Acquire runs the seed's lock() loop until it holds the lock or ctx ends.
func (l *getsetLocker) Acquire(ctx context.Context) (Lease, error) {
	var expires string
	err := retryAcquire(ctx, "getset", l.fixedDelay, func() (bool, error) {
		expires = ms(l.cfg.Clock.Now().Add(l.cfg.TTL + time.Millisecond))
		return l.attempt(ctx, expires)
	})
	if err != nil {
		return Lease{}, err
	}
	return Lease{Validity: l.cfg.TTL, TTL: l.cfg.TTL, Data: expires}, nil
}

func (l *getsetLocker) attempt(ctx context.Context, expires string) (bool, error) {
	octx, cancel := l.op(ctx)
	held, err := setNX(octx, l.rdb, l.cfg.Name, expires)
	cancel()
	if err != nil || held {
		return held, err
	}
	if err := l.cfg.Point(ctx, "acquire:after-setnx-fail"); err != nil {
		return false, stopped("acquire:after-setnx-fail", err)
	}
	octx, cancel = l.op(ctx)
	current, err := l.rdb.Get(octx, l.cfg.Name).Result()
	cancel()
	if errors.Is(err, redis.Nil) {
		return false, nil // released meanwhile: back to SETNX, as the seed says
	}
	if err != nil {
		return false, redisReadErr("GET", err)
	}
	if err := l.cfg.Point(ctx, "acquire:after-get"); err != nil {
		return false, stopped("acquire:after-get", err)
	}
	at, err := strconv.ParseInt(current, 10, 64)
	if err != nil {
		return false, fmt.Errorf("GET: lock value %q is not a time in ms: %w", current, err)
	}
	if at >= l.cfg.Clock.Now().UnixMilli() {
		return false, nil // still valid by our clock
	}
	if err := ctx.Err(); err != nil {
		return false, err // no takeover write after the caller gave up
	}
	// Found expired: the race of seed 000 is between here and the GETSET (getset-race aims at it).
	if err := l.cfg.Point(ctx, "acquire:before-getset"); err != nil {
		return false, stopped("acquire:before-getset", err)
	}
	octx, cancel = l.op(ctx)
	defer cancel()
	// GETSET, deprecated since Redis 6.2 for SET ... GET, is the seed's own command (RedisLockUtil).
	//lint:ignore SA1019 faithful to the seed
	old, err := l.rdb.GetSet(octx, l.cfg.Name, expires).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, redisWriteErr("GETSET", err)
	}
	return old == current || l.blindTakeover, nil
}

// Release deletes the key if GET still shows our expiry; ErrNotHeld otherwise.
func (l *getsetLocker) Release(ctx context.Context, lease Lease) error {
	expires, ok := lease.Data.(string)
	if !ok {
		return fmt.Errorf("getset release: lease has no expiry value (Data %T)", lease.Data)
	}
	if l.plainDEL {
		return l.releaseByDEL(ctx)
	}
	octx, cancel := l.op(ctx)
	current, err := l.rdb.Get(octx, l.cfg.Name).Result()
	cancel()
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	if err != nil {
		return fmt.Errorf("getset release: %w", redisReadErr("GET", err))
	}
	if current != expires {
		return ErrNotHeld
	}
	if err := l.cfg.Point(ctx, "release:after-get"); err != nil {
		return stopped("release:after-get", err)
	}
	octx, cancel = l.op(ctx)
	defer cancel()
	if err := l.rdb.Del(octx, l.cfg.Name).Err(); err != nil {
		return fmt.Errorf("getset release: %w", redisWriteErr("DEL", err))
	}
	return nil
}

func init() {
	Register(Info{
		Name:       "getset",
		Summary:    "SETNX key expiresAt; if taken and expired by the client's clock, GETSET takeover; release: GET compare then DEL.",
		Source:     "seed 000 (基于redis实现分布式锁: RedisLockUtil, Java)",
		Topologies: []string{topoRedisSingle, topoRedisSentinel},
		Points:     []string{"acquire:after-setnx-fail", "acquire:after-get", "acquire:before-getset", "release:after-get"},
		New:        newGetSet,
	})
}
