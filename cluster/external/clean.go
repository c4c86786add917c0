package external

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockchaos/lockchaos/cluster"
)

// On someone else's servers a run touches only names that start with its prefix,
// cluster.ProxyPrefix + run id + "-": the harness puts it before the lock's name, and every
// algorithm derives its keys from that name (Redis: the name and name-derived keys; ZooKeeper and etcd:
// under /lockchaos/<name>). Close removes them, so a run leaves nothing behind, even a lock
// that no TTL would ever free (setnx) — and nothing else, never FLUSHALL.

// zkRoot and etcdRoot are where the ZooKeeper and etcd algorithms keep their locks.
const (
	zkRoot   = "/lockchaos"
	etcdRoot = "/lockchaos/"
)

// RemoveRunData deletes the run's own keys and znodes from every data node; errors are joined.
func (b *backend) RemoveRunData(ctx context.Context) error {
	prefix := cluster.ProxyPrefix + b.id + "-"
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var errs []error
	for _, fn := range b.file.Nodes {
		if fn.Kind == cluster.KindSentinel {
			continue // a sentinel holds no lock data
		}
		_, err := deleteData(ctx, fn, prefix, func(string) bool { return true })
		if err != nil {
			errs = append(errs, fmt.Errorf("remove the run's keys (%s*) from %s: %w", prefix, fn.Name, err))
		}
		if fn.Kind != cluster.KindRedis {
			break // every member of an ensemble holds the whole tree
		}
	}
	return errors.Join(errs...)
}

// cleanStaleData removes the keys and znodes that runs on this host left when they were killed
// (their process is gone, see staleRun), and says so on log.
func cleanStaleData(ctx context.Context, f *cluster.ExternalFile, log io.Writer) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, n := range f.Nodes {
		count, err := deleteData(ctx, n, cluster.ProxyPrefix, staleRun)
		if log != nil && err != nil {
			fmt.Fprintf(log, "lockchaos: removing stale lockchaos keys from %s: %v\n", n.Name, err)
		} else if log != nil && count > 0 {
			fmt.Fprintf(log, "lockchaos: removed %d stale lockchaos keys of killed runs from %s\n", count, n.Name)
		}
		if n.Kind != cluster.KindRedis {
			return
		}
	}
}

// deleteData deletes lock data from a cluster file's server n: the Redis keys, the children of
// /lockchaos (ZooKeeper), the names under /lockchaos/ (etcd) and the rows of the PostgreSQL lease
// tables that start with prefix and that match accepts. It returns how many it deleted. MariaDB's
// locks (GET_LOCK) live in sessions: they leave nothing behind.
func deleteData(ctx context.Context, n cluster.ExternalNode, prefix string, match func(name string) bool) (int, error) {
	addr := n.Address
	switch n.Kind {
	case cluster.KindPostgres:
		return pgDelete(ctx, addr, n.Login(), prefix, match)
	case cluster.KindRedis:
		return redisDelete(ctx, addr, prefix, match)
	case cluster.KindZooKeeper:
		return zkDelete(ctx, addr, prefix, match)
	case cluster.KindEtcd:
		return etcdDelete(ctx, addr, prefix, match)
	}
	return 0, nil
}

func redisDelete(ctx context.Context, addr, prefix string, match func(string) bool) (int, error) {
	r := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 1, DialTimeout: time.Second})
	defer r.Close()
	// A replica holds what its master holds and refuses DEL: the master's delete reaches it.
	if role, err := r.Do(ctx, "ROLE").Slice(); err == nil && len(role) > 0 && role[0] != "master" {
		return 0, nil
	}
	var cursor uint64
	n := 0
	for {
		// The prefix has no glob characters (letters, digits and dashes), so MATCH is exact.
		keys, next, err := r.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return n, err
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, prefix) || !match(k) {
				continue
			}
			if err := r.Del(ctx, k).Err(); err != nil {
				return n, err
			}
			n++
		}
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

// pgLeaseTables are the tables the PostgreSQL algorithms keep lock rows in, by the lock's name:
// pg-lease's, and pglock's (cirello.io/pglock's DefaultTableName). A run leaves the tables (other
// runs may be using them) and removes its rows.
var pgLeaseTables = []string{"lockchaos_leases", "locks"}

func pgDelete(ctx context.Context, addr string, l cluster.SQLLogin, prefix string, match func(string) bool) (int, error) {
	conn, err := pgConnect(ctx, addr, l)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	n := 0
	for _, table := range pgLeaseTables {
		// A table of that name without a name column is not one of ours: left alone.
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 AND column_name = 'name')`, table).Scan(&exists); err != nil {
			return n, err
		}
		if !exists {
			continue
		}
		// The prefix has no LIKE wildcards (letters, digits and dashes).
		rows, err := conn.Query(ctx, "SELECT name FROM "+table+" WHERE name LIKE $1", prefix+"%")
		if err != nil {
			return n, fmt.Errorf("%s: %w", table, err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return n, fmt.Errorf("%s: %w", table, err)
		}
		for _, name := range names {
			if !match(name) {
				continue
			}
			if _, err := conn.Exec(ctx, "DELETE FROM "+table+" WHERE name = $1", name); err != nil {
				return n, fmt.Errorf("%s: %w", table, err)
			}
			n++
		}
	}
	return n, nil
}

// pgConnect opens a connection to the server at addr as l.
func pgConnect(ctx context.Context, addr string, l cluster.SQLLogin) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(l.PostgresURL(addr))
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cfg)
}

func zkDelete(ctx context.Context, addr, prefix string, match func(string) bool) (int, error) {
	dl, _ := ctx.Deadline()
	conn, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogInfo(false),
		zk.WithDialer(func(network, a string, timeout time.Duration) (net.Conn, error) {
			return (&net.Dialer{Deadline: dl}).DialContext(ctx, network, a)
		}), zk.WithLogger(nopZKLogger{}))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	children, _, err := conn.Children(zkRoot)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, ch := range children {
		if strings.HasPrefix(ch, prefix) && match(ch) {
			if err := zkDeleteTree(conn, path.Join(zkRoot, ch)); err != nil {
				errs = append(errs, err)
				continue
			}
			n++
		}
	}
	return n, errors.Join(errs...)
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

func etcdDelete(ctx context.Context, addr, prefix string, match func(string) bool) (int, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 2 * time.Second})
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, etcdRoot+prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, err
	}
	n := 0
	for _, kv := range resp.Kvs {
		name, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), etcdRoot), "/")
		if !match(name) {
			continue
		}
		if _, err := cli.Delete(ctx, string(kv.Key)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
