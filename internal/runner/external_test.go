package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/exttest"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestExternalMatchesLocal runs cells through the external backend, as a user with someone
// else's cluster would: the servers and the toxiproxy-server are started outside lockchaos and
// only named in a cluster file (restart through the file's restart command). Each cell must give
// the verdict the catalogue expects (what TestCatalogue shows on the local backend), every key
// the run wrote must carry the run's prefix, and no proxy may be left on the toxiproxy-server.
func TestExternalMatchesLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cells against real servers")
	}
	r := exttest.StartRedis(t)
	zk := exttest.StartZooKeeper(t)
	tp := exttest.Toxiproxy(t)
	redisFile := exttest.WriteClusterFile(t, t.TempDir(), exttest.Node{
		Name: "redis-1", Kind: "redis", Address: r.Addr, Toxiproxy: tp, Kill: r.Kill, Restart: r.Restart,
	})
	zkFile := exttest.WriteClusterFile(t, t.TempDir(), exttest.Node{
		Name: "zk-1", Kind: "zookeeper", Address: zk, Toxiproxy: tp,
	})
	cells := []struct{ scenario, algorithm, file string }{
		{"baseline", "token", redisFile},
		{"client-pause", "token", redisFile},
		{"partition", "token", redisFile},
		{"restart", "token", redisFile},
		{"partition", "zookeeper", zkFile},
	}
	out := t.TempDir()
	if dir := os.Getenv("LOCKCHAOS_REPORTS"); dir != "" {
		out = dir
	}
	for _, tc := range cells {
		t.Run(tc.scenario+"/"+tc.algorithm, func(t *testing.T) {
			s, err := scenarios.Lookup(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			cell, err := s.Cell(tc.algorithm)
			if err != nil {
				t.Fatal(err)
			}
			var last string
			for attempt := 1; attempt <= 2; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				rc, _, err := runner.RunCell(ctx, cell, runner.Options{Out: out, Seed: int64(attempt),
					Backend: cluster.External, ClusterFile: tc.file}, attempt)
				cancel()
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
				res := rc.Result
				t.Logf("attempt %d: %s (class %v), %d acquires", attempt, res.Verdict, deref(res.ViolationClass), res.AcquiresOk)
				if res.Matches != nil && *res.Matches {
					return
				}
				last = string(res.Verdict) + ", expected " + cell.Expected + " (" + filepath.Join(out, rc.Dir, "report.html") + ")"
			}
			t.Errorf("%s × %s on external: %s", tc.algorithm, tc.scenario, last)
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
