package harness_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/internal/exttest"
)

var (
	registerPanickyExt sync.Once
	panickyExtAddrs    = make(chan string, 100) // the addresses its clients were given
)

// TestExternalPanicRemovesProxies: a run on someone else's cluster that ends in a panic (a lock's
// code) still deletes its proxies from the toxiproxy-server.
func TestExternalPanicRemovesProxies(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	lock := &panicky{}
	registerPanickyExt.Do(func() {
		algorithms.Register(algorithms.Info{Name: "test-panicky-external", Topologies: []string{cluster.RedisSingle},
			New: func(c algorithms.Config) (algorithms.Locker, error) {
				panickyExtAddrs <- c.Addrs[0]
				return lock, nil
			}})
	})
	r := exttest.StartRedis(t)
	tp := exttest.Toxiproxy(t)
	file := exttest.WriteClusterFile(t, t.TempDir(), exttest.Node{Name: "redis-1", Kind: "redis", Address: r.Addr, Toxiproxy: tp})
	cfg := harness.Config{Algorithm: "test-panicky-external", Scenario: "panic", Dir: t.TempDir(),
		Backend: cluster.External, ClusterFile: file, Proxies: harness.ProxyAlways,
		Duration: 5 * time.Second, Workload: harness.Workload{Clients: 2}}
	_, err := harness.Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "panicked: boom") {
		t.Fatalf("err = %v, want the panic as the run's error", err)
	}
	if a := <-panickyExtAddrs; a == r.Addr {
		t.Fatalf("the clients were not given proxies (%s is the server's own address)", a)
	}
	if left := exttest.Proxies(t, tp, cluster.ProxyPrefix); len(left) > 0 {
		t.Errorf("proxies left after the panic: %v", left)
	}
}
