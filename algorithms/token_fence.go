package algorithms

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// tokenFenceLocker is the token lock with a fencing token (Kleppmann, "How to do distributed
// locking": the lock service hands out a number that grows with every grant, and the resource
// rejects writes carrying a smaller one). The fence is an INCR of a counter key on the same Redis,
// taken in the same Lua script as the SET NX PX, so a grant and its fence are one atomic step:
//
//	SET key token NX PX ttl ──set──> INCR key:fence ──> fence
//	                        └─taken──> 0 (busy, retry)
//
// Release is the token lock's compare-and-delete; the counter is never deleted.
//
// How it fails: the counter is only as durable as the lock key. With the resource checking
// fences, a holder paused past its TTL writes with a fence below its successor's and is rejected
// (client-pause: exclusion is violated, no update is lost). But a failover to a replica that never
// saw the counter (docs/design.md#catalogue-and-expectations failover), or a restart without persistence, resets it: the next
// holder gets a fence at or below the old holder's, the resource accepts both, and updates are
// lost. A fencing token must come from a store at least as consistent as the one it protects.
type tokenFenceLocker struct{ *redisBase }

// setAndFence takes the lock and its fence atomically: the counter after INCR, or 0 when the key
// was taken (INCR never returns 0, so 0 cannot be a fence).
const setAndFence = `if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
    return redis.call("INCR", KEYS[2])
end
return 0`

// fenceKey is the counter's key beside the lock's.
func fenceKey(name string) string { return name + ":fence" }

func newTokenFence(cfg Config) (Locker, error) {
	b, err := newRedisBase(cfg)
	if err != nil {
		return nil, fmt.Errorf("token+fence: %w", err)
	}
	return &tokenFenceLocker{b}, nil
}

// Acquire retries the script with one fresh token until it sets the key.
func (l *tokenFenceLocker) Acquire(ctx context.Context) (Lease, error) {
	tok := l.token()
	var fence int64
	err := retryAcquire(ctx, "token+fence", l.fixedDelay, func() (bool, error) {
		octx, cancel := l.op(ctx)
		defer cancel()
		n, err := l.rdb.Eval(octx, setAndFence, []string{l.cfg.Name, fenceKey(l.cfg.Name)}, tok, l.cfg.TTL.Milliseconds()).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return false, redisWriteErr("EVAL SET NX PX + INCR", err)
		}
		fence = n
		return n > 0, nil
	})
	if err != nil {
		return Lease{}, err
	}
	return Lease{Fence: uint64(fence), Validity: l.cfg.TTL, TTL: l.cfg.TTL, Data: tok}, nil
}

// Release deletes the key only if it still holds the lease's token; ErrNotHeld otherwise.
func (l *tokenFenceLocker) Release(ctx context.Context, lease Lease) error {
	return releaseToken(ctx, l.redisBase, "token+fence", lease)
}

func init() {
	Register(Info{
		Name:       "token+fence",
		Summary:    "token lock whose fence is INCR of a counter on the same Redis, in one Lua script with the SET NX PX.",
		Source:     "Kleppmann, How to do distributed locking (fencing tokens); seed 003's token lock",
		Topologies: []string{topoRedisSingle, topoRedisSentinel},
		Points:     []string{"release:before-del"},
		Fenced:     true,
		New:        newTokenFence,
	})
}
