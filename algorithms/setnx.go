package algorithms

import (
	"context"
	"fmt"
)

// setnxLocker is the first approach of seeds 000 and 002: SETNX key value to lock, DEL key to
// unlock, no expiry at all.
//
// How it fails: a holder that crashes (docs/design.md#catalogue-and-expectations client-crash) or is cut off for good leaves the
// key forever, so every other client waits forever (stuck); so does node-kill. It has no lease, so
// pauses and delays cannot break exclusion; only losing the key (failover, restart) can.
type setnxLocker struct{ *redisBase }

func newSetNX(cfg Config) (Locker, error) {
	b, err := newRedisBase(cfg)
	if err != nil {
		return nil, fmt.Errorf("setnx: %w", err)
	}
	return &setnxLocker{b}, nil
}

// Acquire retries SETNX until it sets the key.
func (l *setnxLocker) Acquire(ctx context.Context) (Lease, error) {
	value := fmt.Sprintf("client-%d", l.cfg.Client)
	err := retryAcquire(ctx, "setnx", l.fixedDelay, func() (bool, error) {
		octx, cancel := l.op(ctx)
		defer cancel()
		return setNX(octx, l.rdb, l.cfg.Name, value)
	})
	if err != nil {
		return Lease{}, err
	}
	return Lease{Data: value}, nil
}

// Release deletes the key, whoever holds it; ErrNotHeld when there was none.
func (l *setnxLocker) Release(ctx context.Context, _ Lease) error {
	return l.releaseByDEL(ctx)
}

func init() {
	Register(Info{
		Name:       "setnx",
		Summary:    "SETNX key; DEL key. No expiry.",
		Source:     "seed 000 (基于redis实现分布式锁, first approach) and seed 002 (redis分布式锁详解)",
		Topologies: []string{topoRedisSingle, topoRedisSentinel},
		Points:     []string{"release:before-del"},
		New:        newSetNX,
	})
}
