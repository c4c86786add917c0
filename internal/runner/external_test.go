package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/exttest"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestExternalMatchesLocal runs cells through the external backend, as a user with someone
// else's cluster would: the servers and the toxiproxy-server are started outside lockchaos and
// only named in a cluster file (restart through the file's restart command; clock-jump over a
// client connection, on the run's keys only). Each cell must give
// the verdict the catalogue expects (what the selftest shows on the local backend), every key
// the run wrote must carry the run's prefix, and no proxy may be left on the toxiproxy-server.
func TestExternalMatchesLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cells against real servers")
	}
	r := exttest.StartRedis(t)
	zkAddr := exttest.StartZooKeeper(t)
	tp := exttest.Toxiproxy(t)
	redisFile := exttest.WriteClusterFile(t, t.TempDir(), exttest.Node{
		Name: "redis-1", Kind: "redis", Address: r.Addr, Toxiproxy: tp, Kill: r.Kill, Restart: r.Restart,
	})
	zkFile := exttest.WriteClusterFile(t, t.TempDir(), exttest.Node{
		Name: "zk-1", Kind: "zookeeper", Address: zkAddr, Toxiproxy: tp,
	})
	etcdAddr := exttest.StartEtcd(t)
	etcdFile := exttest.WriteClusterFile(t, t.TempDir(), exttest.Node{
		Name: "etcd-1", Kind: "etcd", Address: etcdAddr, Toxiproxy: tp,
	})
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdAddr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	// Someone else's data on the same servers: no run may touch it.
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	zc, _, err := zk.Connect([]string{zkAddr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	if _, err := zc.Create("/someone-elses-znode", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	cells := []struct{ scenario, algorithm, file string }{
		{"baseline", "token", redisFile},
		{"client-pause", "token", redisFile},
		{"partition", "token", redisFile},
		{"partition", "setnx", redisFile}, // its lock has no TTL: only the cleanup removes it
		{"restart", "token", redisFile},
		{"clock-jump", "token", redisFile}, // the jump script runs over a client connection: it applies
		{"partition", "zookeeper", zkFile},
		{"partition", "etcd", etcdFile},
	}
	out := t.TempDir()
	for _, tc := range cells {
		t.Run(tc.scenario+"/"+tc.algorithm, func(t *testing.T) {
			// An hour's TTL: a clock jump that touched it would take the jump (the TTL, 500ms) off.
			var set time.Time
			setKey := func() {
				set = time.Now()
				if err := rdb.Set(ctx, "someone-elses-key", "v", time.Hour).Err(); err != nil {
					t.Fatal(err)
				}
			}
			setKey()
			o := runner.Options{Out: out, Backend: cluster.External, ClusterFile: tc.file}
			matchesOn(t, tc.scenario, tc.algorithm, o, 2*time.Minute, func(rc reports.Cell, err error) {
				defer setKey() // for the next run
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				if left := exttest.Proxies(t, tp, cluster.ProxyPrefix); len(left) > 0 {
					t.Errorf("proxies left on the toxiproxy-server after the run: %v", left)
				}
				h, err := history.ReadFile(filepath.Join(out, rc.Dir, "history.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				if h.Meta.Backend != cluster.External {
					t.Errorf("history's backend %q", h.Meta.Backend)
				}
				for _, e := range h.Events {
					if e.Lock != "" && (len(e.Lock) < len(cluster.ProxyPrefix) || e.Lock[:len(cluster.ProxyPrefix)] != cluster.ProxyPrefix) {
						t.Fatalf("lock %q is not under the run's prefix", e.Lock)
					}
				}
				if keys, err := rdb.Keys(ctx, cluster.ProxyPrefix+"*").Result(); err != nil || len(keys) > 0 {
					t.Errorf("keys of the run left on the redis-server: %v (%v)", keys, err)
				}
				if ch, _, err := zc.Children("/lockchaos"); err != nil && !errors.Is(err, zk.ErrNoNode) || len(ch) > 0 {
					t.Errorf("znodes of the run left under /lockchaos: %v (%v)", ch, err)
				}
				// (restart empties the server: that is its fault, not lockchaos's cleanup)
				if v, err := rdb.Get(ctx, "someone-elses-key").Result(); tc.scenario != "restart" && (err != nil || v != "v") {
					t.Errorf("someone else's key after the run: %q, %v", v, err)
				}
				if left, err := rdb.PTTL(ctx, "someone-elses-key").Result(); tc.scenario != "restart" && (err != nil || left < time.Hour-time.Since(set)-250*time.Millisecond) {
					t.Errorf("someone else's key's TTL after %v: %v (%v): the run shifted it", time.Since(set), left, err)
				}
				if kv, err := etcd.Get(ctx, "/lockchaos/", clientv3.WithPrefix(), clientv3.WithKeysOnly()); err != nil || len(kv.Kvs) > 0 {
					t.Errorf("etcd keys of the run left under /lockchaos/: %v (%v)", kv, err)
				}
			})
		})
	}
	if ok, _, err := zc.Exists("/someone-elses-znode"); err != nil || !ok {
		t.Errorf("someone else's znode after the runs: %v, %v", ok, err)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestExternalSentinel: a master, its replica and three sentinels as someone else's cluster (the
// local backend's, named in a cluster file): clients find the master through the sentinels over
// their own proxies, and token × {partition, client-pause} give the catalogue's verdicts.
func TestExternalSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cells against real servers")
	}
	tp := exttest.Toxiproxy(t)
	var nodes []exttest.Node
	for _, n := range exttest.StartLocal(t, cluster.RedisSentinel) {
		nodes = append(nodes, exttest.Node{Name: n.Name, Kind: string(n.Kind), Address: n.Addr, Toxiproxy: tp})
	}
	dir := t.TempDir()
	file := exttest.WriteClusterFile(t, dir, nodes...)
	// The local backend's sentinels know the master as "lockchaos".
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append([]byte("master_name: lockchaos\n"), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for _, scen := range []string{"partition", "client-pause"} {
		t.Run(scen, func(t *testing.T) {
			s, err := scenarios.Lookup(scen)
			if err != nil {
				t.Fatal(err)
			}
			cell, err := s.Cell("token")
			if err != nil {
				t.Fatal(err)
			}
			var last string
			for attempt := 1; attempt <= 2; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				rc, _, err := runner.RunCell(ctx, cell, runner.Options{Out: out, Seed: int64(attempt),
					Backend: cluster.External, ClusterFile: file}, attempt)
				cancel()
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				if left := exttest.Proxies(t, tp, cluster.ProxyPrefix); len(left) > 0 {
					t.Errorf("proxies left: %v", left)
				}
				h, err := history.ReadFile(filepath.Join(out, rc.Dir, "history.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				if h.Meta.Topology != cluster.RedisSentinel {
					t.Errorf("ran on %s, want %s", h.Meta.Topology, cluster.RedisSentinel)
				}
				res := rc.Result
				t.Logf("attempt %d: %s (class %v), %d acquires", attempt, res.Verdict, deref(res.ViolationClass), res.AcquiresOk)
				if res.Matches != nil && *res.Matches {
					return
				}
				last = string(res.Verdict) + ", expected " + cell.Expected
			}
			t.Errorf("token × %s on an external redis-sentinel: %s", scen, last)
		})
	}
}
