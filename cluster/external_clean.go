package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// On someone else's servers a run touches only names that start with its prefix,
// ProxyPrefix + run id + "-": the harness puts it before the lock's name, and every algorithm
// derives its keys from that name (Redis: the name and name-derived keys; ZooKeeper and etcd:
// under /lockchaos/<name>). Close removes them, so a run leaves nothing behind, even a lock
// that no TTL would ever free (setnx) — and nothing else, never FLUSHALL.

// zkRoot and etcdRoot are where the ZooKeeper and etcd algorithms keep their locks.
const (
	zkRoot   = "/lockchaos"
	etcdRoot = "/lockchaos/"
)

// straggleGap is how long Close waits before it deletes the run's keys a second time: a command a
// closed client wrote just before it closed (a waiter's SETNX) may still land after the first pass.
const straggleGap = 250 * time.Millisecond

// closeExternal is Close's part for the external backend: the run's proxies go first (which cuts
// every proxied client connection and drops what the proxies still hold), then its keys, twice.
// What fails is also said on Spec.Log, since callers often defer Close and drop its error.
func (c *topo) closeExternal() error {
	err := c.rp.removeAll()
	if c.started {
		err = errors.Join(err, c.removeRunData(context.Background(), c.be.runID()))
		time.Sleep(straggleGap)
		err = errors.Join(err, c.removeRunData(context.Background(), c.be.runID()))
	}
	if err != nil {
		c.report(fmt.Sprintf("lockchaos: cleaning up the external cluster: %v\n", err))
	}
	return err
}

// removeRunData deletes the run's own keys and znodes from every node; errors are joined.
func (c *topo) removeRunData(ctx context.Context, runID string) error {
	prefix := ProxyPrefix + runID + "-"
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var errs []error
	for _, n := range c.data {
		var err error
		switch n.Kind {
		case KindRedis:
			err = redisDeletePrefix(ctx, n.Addr, prefix)
		case KindZooKeeper:
			err = zkDeletePrefix(ctx, n.Addr, prefix)
		case KindEtcd:
			err = etcdDeletePrefix(ctx, n.Addr, etcdRoot+prefix)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove the run's keys (%s*) from %s: %w", prefix, n.Name, err))
		}
		if n.Kind != KindRedis {
			break // every member of an ensemble holds the whole tree
		}
	}
	return errors.Join(errs...)
}

func redisDeletePrefix(ctx context.Context, addr, prefix string) error {
	r := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 1, DialTimeout: time.Second})
	defer r.Close()
	var cursor uint64
	for {
		keys, next, err := r.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, prefix) { // the pattern's glob characters are the run id's: none
				continue
			}
			if err := r.Del(ctx, k).Err(); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

func zkDeletePrefix(ctx context.Context, addr, prefix string) error {
	dl, _ := ctx.Deadline()
	conn, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogInfo(false),
		zk.WithDialer(func(network, a string, timeout time.Duration) (net.Conn, error) {
			return (&net.Dialer{Deadline: dl}).DialContext(ctx, network, a)
		}), zk.WithLogger(nopZKLogger{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	children, _, err := conn.Children(zkRoot)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, ch := range children {
		if strings.HasPrefix(ch, prefix) {
			errs = append(errs, zkDeleteTree(conn, path.Join(zkRoot, ch)))
		}
	}
	return errors.Join(errs...)
}

// zkDeleteTree deletes p and everything under it (the ephemeral children are gone once the
// clients' sessions closed; a lingering one is deleted too).
func zkDeleteTree(conn *zk.Conn, p string) error {
	children, _, err := conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ch := range children {
		if err := zkDeleteTree(conn, path.Join(p, ch)); err != nil {
			return err
		}
	}
	if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

type nopZKLogger struct{}

func (nopZKLogger) Printf(string, ...any) {}

func etcdDeletePrefix(ctx context.Context, addr, prefix string) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 2 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Delete(ctx, prefix, clientv3.WithPrefix())
	return err
}
