package algorithms

import (
	"context"
	"fmt"
)

// setnxExpireLocker is seed 002's "setnx + expire": SETNX key value, then PEXPIRE key ttl as a
// second command (the seed's EXPIRE, in milliseconds so sub-second TTLs work); unlock by plain DEL.
//
// How it fails: a client that dies between SETNX and EXPIRE (docs/design.md#catalogue-and-expectations client-crash, at
// acquire:after-setnx) leaves a key with no expiry: nobody gets the lock again (stuck, seed 002
// problem 1). The plain DEL removes whoever's key is there, so a release delayed past the TTL
// deletes the next holder's lock (slow-release, seed 003's table), and a paused holder writes
// after its key expired (client-pause).
type setnxExpireLocker struct{ *redisBase }

func newSetNXExpire(cfg Config) (Locker, error) {
	b, err := newRedisBase(cfg)
	if err != nil {
		return nil, fmt.Errorf("setnx-expire: %w", err)
	}
	return &setnxExpireLocker{b}, nil
}

// Acquire retries SETNX until it sets the key, then sets the expiry.
func (l *setnxExpireLocker) Acquire(ctx context.Context) (Lease, error) {
	value := fmt.Sprintf("client-%d", l.cfg.Client)
	err := retryAcquire(ctx, "setnx-expire", l.fixedDelay, func() (bool, error) {
		octx, cancel := l.op(ctx)
		defer cancel()
		return setNX(octx, l.rdb, l.cfg.Name, value)
	})
	if err != nil {
		return Lease{}, err
	}
	if err := l.cfg.Point(ctx, "acquire:after-setnx"); err != nil {
		return Lease{}, stoppedHolding("acquire:after-setnx", err)
	}
	octx, cancel := l.op(ctx)
	defer cancel()
	ok, err := l.rdb.PExpire(octx, l.cfg.Name, l.cfg.TTL).Result()
	if err != nil {
		// The key is ours and may have no expiry: neither held for sure nor free.
		return Lease{}, &UnknownError{Op: "setnx-expire acquire: EXPIRE after SETNX", Err: err}
	}
	if !ok {
		return Lease{}, fmt.Errorf("setnx-expire acquire: EXPIRE: the key vanished after SETNX: %w", ErrNotHeld)
	}
	return Lease{Validity: l.cfg.TTL, TTL: l.cfg.TTL, Data: value}, nil
}

// Release deletes the key, whoever holds it; ErrNotHeld when there was none.
func (l *setnxExpireLocker) Release(ctx context.Context, _ Lease) error {
	return l.releaseByDEL(ctx)
}

func init() {
	Register(Info{
		Name:       "setnx-expire",
		Summary:    "SETNX key, then EXPIRE key ttl as a second command; release by plain DEL.",
		Source:     "seed 002 (redis分布式锁详解: setnx + expire, before SET NX PX)",
		Topologies: []string{topoRedisSingle, topoRedisSentinel},
		Points:     []string{"acquire:after-setnx", "release:before-del"},
		New:        newSetNXExpire,
	})
}
