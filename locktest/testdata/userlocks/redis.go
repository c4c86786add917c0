// Package userlocks holds distributed locks written the way users write them, outside lockchaos's
// repository: go-redis, go-zookeeper, etcd's clientv3, pgx and go-sql-driver/mysql, no
// Config.Point call anywhere. locktest.Run tests them (locks_test.go); lockchaos's own
// locktest/outoftree_test.go builds this directory as a module of its own and runs its tests.
//
// Each lock has a correct twin and, through a bug value, the classic mistakes: the tests expect
// the correct twin to do as well as its topology's reference lock, and each bug to be caught by
// the scenario that names it.
package userlocks

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/redis/go-redis/v9"
)

// Bug is the one mistake a buggy twin makes; Correct makes none.
type Bug int

const (
	Correct     Bug = iota
	PlainDel        // Redis: release by a plain DEL, whoever holds the key
	NoValidity      // lease locks: the holder trusts the lease until it releases
	NoValid         // session locks (etcd, SQL): the holder never asks whether it still holds
	Persistent      // ZooKeeper: PERSISTENT sequential nodes, never removed when their holder dies
	SessionLock     // through a transaction pooler: a session advisory lock, not a transaction's
)

// opTimeout bounds one request to a server: Config.OpTimeout when the test gives one (a scenario
// may, so that a reply it holds back still reaches the lock: latency gives 2×TTL), else TTL/4.
func opTimeout(cfg algorithms.Config) time.Duration {
	if cfg.OpTimeout > 0 {
		return cfg.OpTimeout
	}
	return max(cfg.TTL/4, 100*time.Millisecond)
}

// compareAndDelete is the release script of the Redis SET documentation.
const compareAndDelete = `if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end`

// RedisLock is SET key token NX PX ttl in a retry loop, released by compare-and-delete, on one
// Redis, through Sentinel, or on a Redis Cluster — whichever the test gives.
type RedisLock struct {
	rdb redis.UniversalClient
	key string
	ttl time.Duration
	op  time.Duration
	bug Bug
}

// NewRedisLock builds the lock for one client: redis.NewClient on one address, NewFailoverClient
// when cfg.Sentinel is set, NewClusterClient when cfg.Cluster is. Every connection goes through
// cfg.Dial (the client's proxy).
func NewRedisLock(cfg algorithms.Config, bug Bug) (*RedisLock, error) {
	op := opTimeout(cfg)
	var rdb redis.UniversalClient
	switch {
	case cfg.Sentinel != nil:
		rdb = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: cfg.Sentinel.MasterName, SentinelAddrs: cfg.Sentinel.Addrs, Dialer: cfg.Dial,
			MaxRetries: -1, DialTimeout: op, ReadTimeout: op, WriteTimeout: op, ContextTimeoutEnabled: true,
		})
	case cfg.Cluster:
		rdb = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: cfg.Addrs, Dialer: cfg.Dial,
			MaxRetries: -1, DialTimeout: op, ReadTimeout: op, WriteTimeout: op, ContextTimeoutEnabled: true,
		})
	case len(cfg.Addrs) == 1:
		rdb = redis.NewClient(&redis.Options{
			Addr: cfg.Addrs[0], Dialer: cfg.Dial,
			MaxRetries: -1, DialTimeout: op, ReadTimeout: op, WriteTimeout: op, ContextTimeoutEnabled: true,
		})
	default:
		return nil, fmt.Errorf("redis lock: want one address, Sentinel or a cluster, got %d addresses", len(cfg.Addrs))
	}
	return &RedisLock{rdb: rdb, key: cfg.Name, ttl: cfg.TTL, op: op, bug: bug}, nil
}

// Close closes the client.
func (l *RedisLock) Close() error { return l.rdb.Close() }

// redisErr sorts a failed command: an error reply, a failed dial or a closed client did nothing;
// anything else (a timeout, a reset after the command left) may have taken effect.
func redisErr(op string, err error) error {
	var rerr redis.Error
	var oe *net.OpError
	if errors.As(err, &rerr) || errors.As(err, &oe) && oe.Op == "dial" ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return &algorithms.UnknownError{Op: op, Err: err}
}

// reload refreshes a cluster client's slot map after a command failed other than by an error
// reply: go-redis reloads it only on MOVED or when it is 10 s old, and a client still sending to
// a dead master gets no MOVED — after a failover it would wait out those 10 s.
func (l *RedisLock) reload(err error) {
	var rerr redis.Error
	if cc, ok := l.rdb.(*redis.ClusterClient); ok && !errors.As(err, &rerr) {
		cc.ReloadState(context.Background()) // in the background
	}
}

// Acquire sets the key with a fresh token, retrying every 10 ms until it takes or ctx ends.
func (l *RedisLock) Acquire(ctx context.Context) (algorithms.Lease, error) {
	token := rand.Text()
	for {
		if err := ctx.Err(); err != nil {
			return algorithms.Lease{}, err
		}
		// One command under its own timeout: cut off in flight, its outcome would be unknown.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.op)
		ok, err := l.rdb.SetNX(rctx, l.key, token, l.ttl).Result()
		cancel()
		if err != nil {
			l.reload(err)
			return algorithms.Lease{}, redisErr("SET NX PX", err)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return algorithms.Lease{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	if l.bug == NoValidity {
		return algorithms.Lease{TTL: l.ttl, Data: token}, nil
	}
	// The key was set after the call: it lives at least TTL from then, less the clocks' drift.
	return algorithms.Lease{Validity: l.ttl - l.ttl/100 - 2*time.Millisecond, TTL: l.ttl, Data: token}, nil
}

// Release deletes the key if it still holds our token (the buggy twin: whatever it holds).
func (l *RedisLock) Release(ctx context.Context, lease algorithms.Lease) error {
	token, _ := lease.Data.(string)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.op)
	defer cancel()
	var n int64
	var err error
	if l.bug == PlainDel {
		n, err = l.rdb.Del(rctx, l.key).Result()
	} else {
		n, err = l.rdb.Eval(rctx, compareAndDelete, []string{l.key}, token).Int64()
	}
	if err != nil {
		l.reload(err)
		return redisErr("release", err)
	}
	if n == 0 {
		return algorithms.ErrNotHeld
	}
	return nil
}
