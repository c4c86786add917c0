package process_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/algorithms/process"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// TestSentinelMasterThroughProxy: a process client on redis-sentinel (the shipped redis_py.py)
// reaches the master Sentinel names through its own proxy, by init's routes: cutting the client's
// link to the master makes its ownership check fail, and healing it brings the check back. Were
// the client connected to the address Sentinel reports, the cut would not reach it.
func TestSentinelMasterThroughProxy(t *testing.T) {
	testenv.Servers(t)
	if err := exec.Command("/usr/bin/python3", "-c", "import redis").Run(); err != nil {
		testenv.Missing(t, testenv.RequireServers, "Debian's python3-redis is not installed (make deps)")
	}
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSentinel, Clients: 1, Proxies: true})
	ctx := context.Background()
	ep := c.Endpoints(1)
	if len(ep.Routes) == 0 {
		t.Fatalf("client 1's endpoints have no routes: %+v", ep)
	}
	cfg := algorithms.Config{Client: 1, Topology: c.Topology(), Name: "sentinel-routes", TTL: 5 * time.Second,
		Addrs: ep.Addrs, Routes: ep.Routes, OpTimeout: time.Second, Dir: t.TempDir(),
		Sentinel: &algorithms.SentinelConfig{MasterName: ep.MasterName, Addrs: ep.SentinelAddrs}}
	script, _ := filepath.Abs("../../clients/redis_py.py")
	l, err := process.New(process.Spec{Name: "redis-py", Command: []string{"/usr/bin/python3", script},
		Topology: c.Topology(), Valid: true, InitTimeout: 20 * time.Second}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	lease, err := l.Acquire(actx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if !l.Valid(lease) {
		t.Fatal("Valid right after the acquire: false, want true")
	}

	// The master as Sentinel names it, and its node.
	direct := c.Endpoints(0)
	s := redis.NewSentinelClient(&redis.Options{Addr: direct.SentinelAddrs[0]})
	defer s.Close()
	addr, err := s.GetMasterAddrByName(ctx, ep.MasterName).Result()
	if err != nil {
		t.Fatal(err)
	}
	master := ""
	for _, n := range c.Nodes() {
		if n.Addr == addr[0]+":"+addr[1] {
			master = n.Name
		}
	}
	if master == "" {
		t.Fatalf("Sentinel names the master %v, which is none of %+v", addr, c.Nodes())
	}
	if _, ok := ep.Routes[addr[0]+":"+addr[1]]; !ok {
		t.Fatalf("routes %v do not map the master's address %v", ep.Routes, addr)
	}
	link, err := c.FaultLink(1, master)
	if err != nil {
		t.Fatal(err)
	}
	if err := link.SetEnabled(ctx, false); err != nil {
		t.Fatal(err)
	}
	if l.Valid(lease) {
		t.Errorf("Valid with client 1's link to the master %s cut: true, want false (the connection bypasses the proxy)", master)
	}
	if err := link.SetEnabled(ctx, true); err != nil {
		t.Fatal(err)
	}
	// The first check after the heal may meet the connection the cut closed; redis-py connects
	// again for the next.
	healed := false
	for i := 0; i < 5 && !healed; i++ {
		healed = l.Valid(lease)
	}
	if !healed {
		t.Errorf("Valid after the link to the master healed: false 5 times, want true (the key's lease is 5 s)")
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := l.Release(rctx, lease); err != nil {
		t.Errorf("Release: %v", err)
	}
}
