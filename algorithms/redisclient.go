package algorithms

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Topology names (the cluster package's; repeated here so algorithms need not import it).
const (
	topoRedisSingle   = "redis-single"
	topoRedisSentinel = "redis-sentinel"
	topoRedisMulti    = "redis-multi"
	topoZooKeeper     = "zookeeper"
)

// newLockClient is the client of the single-master Redis algorithms: newRedisClient, or a Redis
// Cluster client when cfg.Cluster is set (the key goes to its slot's master).
func newLockClient(cfg Config, addr string, timeout time.Duration) redis.UniversalClient {
	if cfg.Cluster {
		return newRedisClusterClient(cfg, timeout)
	}
	return newRedisClient(cfg, addr, timeout)
}

// newRedisClient connects to one Redis node, or to the master Sentinel names when cfg.Sentinel is
// set.
func newRedisClient(cfg Config, addr string, timeout time.Duration) *redis.Client {
	o := redisOptions(cfg, timeout)
	if cfg.Sentinel != nil {
		o.MasterName, o.Addrs = cfg.Sentinel.MasterName, cfg.Sentinel.Addrs
		return redis.NewFailoverClient(o.Failover())
	}
	o.Addrs = []string{addr}
	return redis.NewClient(o.Simple())
}

// redisOptions are the options of every Redis client of the algorithms (one node, Sentinel's
// master, a cluster): it never retries a command (a retried SET NX could be a second, different
// write), bounds every step by timeout, so a black-holed link fails fast, and dials through
// cfg.Dial with a probe (probeDialer).
func redisOptions(cfg Config, timeout time.Duration) *redis.UniversalOptions {
	return &redis.UniversalOptions{
		Dialer:                   probeDialer(cfg.Dial),
		Protocol:                 2,
		MaxRetries:               -1,
		DialTimeout:              timeout,
		DialerRetries:            1,
		ReadTimeout:              timeout,
		WriteTimeout:             timeout,
		PoolTimeout:              timeout,
		ContextTimeoutEnabled:    true,
		PoolSize:                 8,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// probeDialer dials (through dial, when set) and sends one PING on the fresh connection before
// go-redis uses it. Behind a proxy, a dead or black-holed server still accepts the connection;
// the probe turns that into a dial error, so the command that follows is never sent and its
// failure is definite rather than unknown (see redisDefinite). It costs one round trip per new
// connection; pooled connections are reused without it.
func probeDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if dl, ok := ctx.Deadline(); ok {
			_ = c.SetDeadline(dl)
		}
		_, err = c.Write([]byte("*1\r\n$4\r\nPING\r\n"))
		if err == nil {
			var line string
			line, err = bufio.NewReaderSize(c, 64).ReadString('\n')
			if err == nil && line != "+PONG\r\n" {
				err = fmt.Errorf("reply %q", line)
			}
		}
		if err != nil {
			_ = c.Close()
			return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("probe PING to %s: %w", addr, err)}
		}
		_ = c.SetDeadline(time.Time{})
		return c, nil
	}
}

// redisBase is what the single-node Redis algorithms share: one client to the node (or to the
// master through Sentinel).
type redisBase struct {
	cfg Config
	rdb redis.UniversalClient
	mu  sync.Mutex // guards cfg.Rand
}

func newRedisBase(cfg Config) (*redisBase, error) {
	cfg = cfg.withDefaults()
	if cfg.Cluster && len(cfg.Addrs) == 0 {
		return nil, fmt.Errorf("want the Redis Cluster's node addresses, got none")
	}
	if !cfg.Cluster && cfg.Sentinel == nil && len(cfg.Addrs) != 1 {
		return nil, fmt.Errorf("want one Redis address or a Sentinel config, got %d addresses", len(cfg.Addrs))
	}
	addr := ""
	if len(cfg.Addrs) > 0 {
		addr = cfg.Addrs[0]
	}
	return &redisBase{cfg: cfg, rdb: newLockClient(cfg, addr, cfg.OpTimeout)}, nil
}

// Close closes the client's connections.
func (b *redisBase) Close() error { return b.rdb.Close() }

// op bounds one request by OpTimeout. The request does not end with ctx: a request cut off in
// flight has an unknown outcome, so the algorithms let it finish (at most OpTimeout) and look at
// ctx between requests. An acquire that merely waited then fails definitely when ctx ends.
func (b *redisBase) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), b.cfg.OpTimeout)
}

// token returns a fresh random lock value from the client's seeded source.
func (b *redisBase) token() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return randomToken(b.cfg)
}

// randomToken is "c<client>-" and 32 hex digits (fmt's "c%d-%016x%016x", without fmt: one token
// a critical section).
func randomToken(cfg Config) string {
	b := make([]byte, 0, 48)
	b = append(b, 'c')
	b = strconv.AppendInt(b, int64(cfg.Client), 10)
	b = append(b, '-')
	b = appendHex16(b, cfg.Rand.Uint64())
	b = appendHex16(b, cfg.Rand.Uint64())
	return string(b)
}

// appendHex16 appends v as 16 lower-case hex digits, zero-padded.
func appendHex16(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, digits[(v>>uint(shift))&0xf])
	}
	return b
}

func (b *redisBase) fixedDelay() time.Duration { return b.cfg.RetryDelay }

// setNXPX is SET key value NX PX ttl: held is false when the key exists.
func setNXPX(ctx context.Context, rdb redis.UniversalClient, key, value string, ttl time.Duration) (bool, error) {
	err := rdb.Do(ctx, "SET", key, value, "NX", "PX", ttl.Milliseconds()).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, redisWriteErr("SET NX PX", err)
	}
	return true, nil
}

// setNX is the old SETNX command: held is false when the key exists.
func setNX(ctx context.Context, rdb redis.UniversalClient, key, value string) (bool, error) {
	n, err := rdb.Do(ctx, "SETNX", key, value).Int64()
	if err != nil {
		return false, redisWriteErr("SETNX", err)
	}
	return n == 1, nil
}

// del is a plain DEL: ErrNotHeld when there was no key to delete.
// releaseByDEL is the plain release of the seeds' early locks (setnx, setnx-expire, setnx-px):
// DEL the key, whoever holds it — the owner check they lack is their documented bug. ErrNotHeld
// when there was no key.
func (b *redisBase) releaseByDEL(ctx context.Context) error {
	if err := b.cfg.Point(ctx, "release:before-del"); err != nil {
		return stopped("release:before-del", err)
	}
	octx, cancel := b.op(ctx)
	defer cancel()
	return del(octx, b.rdb, b.cfg.Name)
}

func del(ctx context.Context, rdb redis.UniversalClient, key string) error {
	n, err := rdb.Del(ctx, key).Result()
	if err != nil {
		return redisWriteErr("DEL", err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// compareAndDelete is the standard release script (seed 003, the Redis distlock page).
const compareAndDelete = `if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("DEL", KEYS[1])
else
    return 0
end`

// compareAndDeleteScript sends compareAndDelete by its SHA1 (EVALSHA): the body is not sent and
// hashed again on every release. A server that does not have it cached (a fresh start, a restart,
// a replica just promoted) answers NOSCRIPT without running anything, and Run then sends the body
// with EVAL: the script that runs, and when, is the same either way.
var compareAndDeleteScript = redis.NewScript(compareAndDelete)

// casDel runs compareAndDelete: deleted is false when the key held another value or none.
func casDel(ctx context.Context, rdb redis.Scripter, key, value string) (bool, error) {
	n, err := compareAndDeleteScript.Run(ctx, rdb, []string{key}, value).Int64()
	if err != nil {
		return false, redisWriteErr("EVAL compare-and-delete", err)
	}
	return n == 1, nil
}

// retryAcquire runs attempt until it holds the lock or fails, pausing delay() between attempts
// that found the lock busy. Ending ctx while waiting is a definite failure: every attempt either
// held, was busy, or returned its own error.
func retryAcquire(ctx context.Context, name string, delay func() time.Duration, attempt func() (bool, error)) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s acquire: %w", name, err)
		}
		MarkAttempt(ctx)
		held, err := attempt()
		if err != nil {
			return fmt.Errorf("%s acquire: %w", name, err)
		}
		if held {
			return nil
		}
		t := time.NewTimer(delay())
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s acquire: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
