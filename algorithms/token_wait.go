package algorithms

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// tokenWaitLocker is token with Redisson's answer to asynchronous replication
// (redisson/redisson #2669, 2020): after SET key <random> NX PX ttl, the same connection sends
// WAIT 1 <timeout>, which blocks until one replica acknowledged every write of the connection so
// far, or the timeout passed, and answers how many did. An acquire no replica acknowledged is
// released (the compare-and-delete) and fails: a key only the master holds is lost if the master
// dies, so the holder must not rely on it.
//
// What WAIT buys: an acknowledged key is on a replica when the master dies, so the promoted
// replica still holds it. What it does not: WAIT is no consensus. With several replicas the one
// that acknowledged may not be the one promoted (redisson #5256); the failover's own election
// knows nothing of WAIT; and while no replica is reachable (replication cut, a promoted replica
// that has none of its own yet) no acquire succeeds at all (redisson #4706, "None of slaves were
// synced").
type tokenWaitLocker struct {
	*redisBase
	// ignoreWait takes the acquire even when no replica acknowledged (token+wait-ignore).
	ignoreWait bool
}

// errNotReplicated is the acquire's error when no replica acknowledged the key in time.
var errNotReplicated = errors.New("WAIT 1: no replica acknowledged the key")

func newTokenWait(cfg Config) (Locker, error) { return newTokenWaitWith(cfg, "token+wait", false) }

func newTokenWaitWith(cfg Config, name string, ignoreWait bool) (Locker, error) {
	b, err := newRedisBase(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &tokenWaitLocker{b, ignoreWait}, nil
}

// waitTimeout is WAIT's own timeout: a quarter of a request's, so its answer comes back within
// the request's timeout, which also covers a new connection's dial and probe (Redisson's
// slavesSyncTimeout, 1 s by default, is for TTLs of 30 s). With half, a loaded machine timed the
// first request of a run out (the SET's outcome then unknown).
func (l *tokenWaitLocker) waitTimeout() time.Duration {
	return max(l.cfg.OpTimeout/4, time.Millisecond)
}

// Acquire retries SET NX PX + WAIT with one fresh token until it sets the key; an acquire whose
// key no replica acknowledged deletes it again and fails.
func (l *tokenWaitLocker) Acquire(ctx context.Context) (Lease, error) {
	tok := l.token()
	var unacked bool
	err := retryAcquire(ctx, "token+wait", l.fixedDelay, func() (bool, error) {
		octx, cancel := l.op(ctx)
		defer cancel()
		held, un, err := l.attempt(octx, tok)
		unacked = un
		return held, err
	})
	if err != nil {
		return Lease{}, err
	}
	if unacked {
		return Lease{}, fmt.Errorf("token+wait acquire: %w (%w)", ErrGaveUp, errNotReplicated)
	}
	if err := l.cfg.Point(ctx, "acquire:after-wait"); err != nil {
		return Lease{}, stoppedHolding("acquire:after-wait", err)
	}
	return Lease{Validity: l.cfg.TTL, TTL: l.cfg.TTL, Data: tok}, nil
}

// attempt is one SET NX PX and WAIT 1 on one connection of the key's master (WAIT counts the
// replicas that acknowledged that connection's writes; on a connection that wrote nothing it
// answers at once with every replica), and, when no replica acknowledged the key, its
// compare-and-delete on the same connection. held is true once the key is set; unacked says it
// was deleted again (the real lock) or is held unacknowledged (the mutant does not look). A
// failure after the SET set the key leaves the outcome unknown.
func (l *tokenWaitLocker) attempt(ctx context.Context, tok string) (held, unacked bool, err error) {
	node, err := l.master(ctx)
	if err != nil {
		return false, false, err
	}
	conn := node.Conn()
	defer conn.Close()
	if cc, ok := l.rdb.(*redis.ClusterClient); ok {
		defer func() {
			if err != nil {
				cc.ReloadState(ctx) // a dead master, a moved slot: look again next attempt
			}
		}()
	}
	var set, wait *redis.Cmd
	_, _ = conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.Do(ctx, "SET", l.cfg.Name, tok, "NX", "PX", l.cfg.TTL.Milliseconds())
		wait = p.Do(ctx, "WAIT", 1, l.waitTimeout().Milliseconds())
		return nil
	})
	if err := set.Err(); errors.Is(err, redis.Nil) {
		return false, false, nil
	} else if err != nil {
		return false, false, redisWriteErr("SET NX PX", err)
	}
	n, err := wait.Int64()
	if err != nil {
		return false, false, &UnknownError{Op: "WAIT after SET NX PX", Err: err}
	}
	if n >= 1 || l.ignoreWait {
		return true, false, nil
	}
	if _, err := casDel(ctx, conn, l.cfg.Name, tok); err != nil {
		// The key may still be there, unacknowledged, until its TTL.
		return false, false, &UnknownError{Op: "release of an unreplicated acquire", Err: err}
	}
	return true, true, nil
}

// master is the client of the node the key lives on: the slot's master on redis-cluster, else the
// one node (or Sentinel's master).
func (l *tokenWaitLocker) master(ctx context.Context) (*redis.Client, error) {
	switch c := l.rdb.(type) {
	case *redis.ClusterClient:
		m, err := c.MasterForKey(ctx, l.cfg.Name)
		if err != nil {
			c.ReloadState(ctx)
			return nil, fmt.Errorf("find the key's master: %w", err)
		}
		return m, nil
	case *redis.Client:
		return c, nil
	}
	return nil, fmt.Errorf("token+wait: unexpected client %T", l.rdb)
}

// Release deletes the key only if it still holds the lease's token; ErrNotHeld otherwise.
func (l *tokenWaitLocker) Release(ctx context.Context, lease Lease) error {
	return releaseToken(ctx, l.redisBase, "token+wait", lease)
}

func init() {
	Register(Info{
		Name:       "token+wait",
		Summary:    "token, then WAIT 1 on the same connection; an acquire no replica acknowledged is deleted and fails.",
		Source:     "Redisson RLock since redisson/redisson #2669 (WAIT after every lock write)",
		Topologies: []string{topoRedisSentinel, topoRedisCluster},
		Points:     []string{"acquire:after-wait", "release:before-del"},
		New:        newTokenWait,
	})
	Register(Info{
		Name: "token+wait-ignore", Mutant: "token+wait", Topologies: []string{topoRedisSentinel, topoRedisCluster},
		Removed: "WAIT's answer: the acquire succeeds even when no replica acknowledged the key",
		Points:  []string{"acquire:after-wait", "release:before-del"},
		New:     func(cfg Config) (Locker, error) { return newTokenWaitWith(cfg, "token+wait-ignore", true) },
	})
}
