package algorithms

import (
	"context"
	"fmt"
)

// setnxPXLocker is the step of seeds 002 and 003 before the random value: SET key value NX PX ttl
// (atomic, so a crash cannot leave a key without expiry), unlocked by a plain DEL with no owner
// check. The value is the client's name, the same on every acquire.
//
// How it fails: the plain DEL deletes whatever key is there, so a holder whose release is delayed
// past its TTL deletes the next holder's lock and a third client gets it too (docs/design.md#catalogue-and-expectations
// slow-release, seed 003's second table). A paused holder writes after its key expired
// (client-pause), and a failover or restart loses the key (service class).
type setnxPXLocker struct{ *redisBase }

func newSetNXPX(cfg Config) (Locker, error) {
	b, err := newRedisBase(cfg)
	if err != nil {
		return nil, fmt.Errorf("setnx-px: %w", err)
	}
	return &setnxPXLocker{b}, nil
}

// Acquire retries SET NX PX until it sets the key.
func (l *setnxPXLocker) Acquire(ctx context.Context) (Lease, error) {
	value := fmt.Sprintf("client-%d", l.cfg.Client)
	err := retryAcquire(ctx, "setnx-px", l.fixedDelay, func() (bool, error) {
		octx, cancel := l.op(ctx)
		defer cancel()
		return setNXPX(octx, l.rdb, l.cfg.Name, value, l.cfg.TTL)
	})
	if err != nil {
		return Lease{}, err
	}
	return Lease{Validity: l.cfg.TTL, TTL: l.cfg.TTL, Data: value}, nil
}

// Release deletes the key, whoever holds it; ErrNotHeld when there was none.
func (l *setnxPXLocker) Release(ctx context.Context, _ Lease) error {
	return l.releaseByDEL(ctx)
}

func init() {
	Register(Info{
		Name:       "setnx-px",
		Summary:    "SET key value NX PX ttl (atomic); release by plain DEL, no owner check.",
		Source:     "seeds 002 and 003 (SET my_key my_value NX PX, before the random value)",
		Topologies: []string{topoRedisSingle, topoRedisSentinel},
		Points:     []string{"release:before-del"},
		New:        newSetNXPX,
	})
}
