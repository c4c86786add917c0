package algorithms

import (
	"context"
	"fmt"
)

// tokenLocker is seed 003's fix: SET key <random> NX PX ttl, released by the Lua
// compare-and-delete script, so a late release cannot delete another client's lock. The token is
// fresh for every acquire and comes from the client's seeded source.
//
// How it fails: it is still a lease on one master. A paused holder writes after its key expired
// (DESIGN §7 client-pause, client class: fencing fixes it); a failover to a replica that never saw
// the key, a restart without persistence or a clock jump on the node lets a second client in
// while the first still validly holds (service class, seed 003's master/slave table).
type tokenLocker struct{ *redisBase }

func newToken(cfg Config) (Locker, error) {
	b, err := newRedisBase(cfg)
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	return &tokenLocker{b}, nil
}

// Acquire retries SET NX PX with one fresh token until it sets the key.
func (l *tokenLocker) Acquire(ctx context.Context) (Lease, error) {
	tok := l.token()
	err := retryAcquire(ctx, "token", l.fixedDelay, func() (bool, error) {
		octx, cancel := l.op(ctx)
		defer cancel()
		return setNXPX(octx, l.rdb, l.cfg.Name, tok, l.cfg.TTL)
	})
	if err != nil {
		return Lease{}, err
	}
	return Lease{Validity: l.cfg.TTL, TTL: l.cfg.TTL, Data: tok}, nil
}

// Release deletes the key only if it still holds the lease's token; ErrNotHeld otherwise.
func (l *tokenLocker) Release(ctx context.Context, lease Lease) error {
	return releaseToken(ctx, l.redisBase, "token", lease)
}

// releaseToken is the token locks' release: the Lua compare-and-delete of the lease's token.
func releaseToken(ctx context.Context, b *redisBase, alg string, lease Lease) error {
	tok, ok := lease.Data.(string)
	if !ok {
		return fmt.Errorf("%s release: lease has no token (Data %T)", alg, lease.Data)
	}
	if err := b.cfg.Point(ctx, "release:before-del"); err != nil {
		return stopped("release:before-del", err)
	}
	octx, cancel := b.op(ctx)
	defer cancel()
	deleted, err := casDel(octx, b.rdb, b.cfg.Name, tok)
	if err != nil {
		return fmt.Errorf("%s release: %w", alg, err)
	}
	if !deleted {
		return ErrNotHeld
	}
	return nil
}

func init() {
	Register(Info{
		Name:       "token",
		Summary:    "SET key random NX PX ttl; release by Lua compare-and-delete.",
		Source:     "seed 003 (redis分布式锁详解: random value and the Lua release script)",
		Topologies: []string{topoRedisSingle, topoRedisSentinel},
		Points:     []string{"release:before-del"},
		New:        newToken,
	})
}
