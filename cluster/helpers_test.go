package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster/internal/testkit"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// needServers skips the test when the topology's servers are not installed, unless CI asks for
// them with LOCKCHAOS_REQUIRE_SERVERS=1, where a missing server is a failure.
func needServers(t *testing.T, topology string) {
	t.Helper()
	testenv.Servers(t)
	if err := checkBinaries(topology); err != nil {
		testenv.MissingServer(t, err)
	}
}

// startCluster starts spec, fails the test on error, and closes it (checking nothing of the run
// survives) at the end of the test.
func startCluster(t *testing.T, spec Spec) *topo {
	t.Helper()
	needServers(t, spec.Topology)
	if spec.Dir == "" {
		spec.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	c, err := Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start(%s): %v", spec.Topology, err)
	}
	t.Logf("%s (%d nodes, proxies %v) started in %v", spec.Topology, len(c.Nodes()), spec.Proxies, time.Since(t0).Round(time.Millisecond))
	l := c.(*topo)
	dir := l.be.(*local).dir
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("run dir %s still there after Close (%v)", dir, err)
		}
		if pids := procsMentioning(dir); len(pids) > 0 {
			t.Errorf("processes of the run survive Close: %v", pids)
		}
	})
	return l
}

// procsMentioning returns the pids whose command line contains s (the run dir: every server's
// argv names its config file inside it).
func procsMentioning(s string) []int {
	var pids []int
	ents, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, e := range ents {
		b, err := os.ReadFile(e)
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(e)))
		if pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// The helpers cluster/docker's tests share (cluster/internal/testkit).
var (
	redisClient = testkit.RedisClient
	ctxT        = testkit.CtxT
)

// syncBuffer is a bytes.Buffer safe for the cluster's watcher goroutines.
type syncBuffer = testkit.SyncBuffer
