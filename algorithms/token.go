package algorithms

import (
	"context"
	"fmt"
	"time"
)

// tokenLocker is seed 003's fix: SET key <random> NX PX ttl, released by the Lua
// compare-and-delete script, so a late release cannot delete another client's lock. The token is
// fresh for every acquire and comes from the client's seeded source.
//
// How it fails: it is still a lease on one master. A paused holder writes after its key expired
// (docs/design.md#catalogue-and-expectations client-pause, client class: fencing fixes it); a failover to a replica that never saw
// the key, a restart without persistence or a clock jump on the node lets a second client in
// while the first still validly holds (service class, seed 003's master/slave table).
type tokenLocker struct {
	*redisBase
	mut tokenMutation // zero for the real token lock
}

// tokenMutation removes one mechanism from the token lock, for its mutants (mutants_token.go).
type tokenMutation struct {
	// plainDEL releases by plain DEL, without comparing the token (token-plain-del).
	plainDEL bool
	// validityFromReply counts the lease's TTL from when the SET's reply arrived rather than from
	// when Acquire was called (token-no-validity).
	validityFromReply bool
	// noTTL sets the key without PX: no lease, the lock lives until released (token-no-ttl).
	noTTL bool
}

func newToken(cfg Config) (Locker, error) { return newTokenWith(cfg, "token", tokenMutation{}) }

func newTokenWith(cfg Config, name string, mut tokenMutation) (Locker, error) {
	b, err := newRedisBase(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &tokenLocker{b, mut}, nil
}

// Acquire retries SET NX PX with one fresh token until it sets the key.
func (l *tokenLocker) Acquire(ctx context.Context) (Lease, error) {
	var start time.Time // only the token-no-validity mutant counts from it
	if l.mut.validityFromReply {
		start = l.cfg.Clock.Now()
	}
	tok := l.token()
	err := retryAcquire(ctx, "token", l.fixedDelay, func() (bool, error) {
		octx, cancel := l.op(ctx)
		defer cancel()
		if l.mut.noTTL {
			return setNX(octx, l.rdb, l.cfg.Name, tok)
		}
		return setNXPX(octx, l.rdb, l.cfg.Name, tok, l.cfg.TTL)
	})
	if err != nil {
		return Lease{}, err
	}
	// Between the reply and the holder's use of it: where a stalled client (GC, scheduler) makes
	// an acquisition slow after the server granted it (docs/design.md#catalogue-and-expectations latency).
	if err := l.cfg.Point(ctx, "acquire:after-set"); err != nil {
		return Lease{}, stoppedHolding("acquire:after-set", err)
	}
	if l.mut.noTTL {
		return Lease{Data: tok}, nil
	}
	validity := l.cfg.TTL
	if l.mut.validityFromReply {
		// The mutant's holder trusts a full TTL from the reply; Validity is counted from the
		// call, so the time the acquire took is added on.
		validity += l.cfg.Clock.Now().Sub(start)
	}
	return Lease{Validity: validity, TTL: l.cfg.TTL, Data: tok}, nil
}

// Release deletes the key only if it still holds the lease's token; ErrNotHeld otherwise.
func (l *tokenLocker) Release(ctx context.Context, lease Lease) error {
	if l.mut.plainDEL {
		return l.releaseByDEL(ctx)
	}
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
		Name:        "token",
		ReferenceOn: []string{"redis-single", "redis-sentinel", "redis-cluster"},
		Summary:     "SET key random NX PX ttl; release by Lua compare-and-delete.",
		Source:      "seed 003 (redis分布式锁详解: random value and the Lua release script)",
		Topologies:  []string{topoRedisSingle, topoRedisSentinel, topoRedisCluster},
		Points:      []string{"acquire:after-set", "release:before-del"},
		New:         newToken,
	})
}
