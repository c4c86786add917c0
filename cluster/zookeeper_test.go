package cluster

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func zkConnect(t *testing.T, addrs []string) *zk.Conn {
	t.Helper()
	conn, ev, err := zk.Connect(addrs, 2*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatal("no ZooKeeper session after 10s")
		}
	}
}

func TestZooKeeperEnsemble(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: ZooKeeper, Clients: 2, Proxies: true})
	ctx := ctxT(t, 40*time.Second)
	if len(c.Nodes()) != 3 {
		t.Fatalf("Nodes = %+v", c.Nodes())
	}
	e := c.Endpoints(1)
	conn := zkConnect(t, e.Addrs)
	if _, err := conn.Create("/k", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %s", leader)

	// Kill the leader: the other two elect a new one and keep the data; a restarted member
	// rejoins with its data dir (a process restart, not an empty one).
	if err := c.Kill(ctx, leader); err != nil {
		t.Fatal(err)
	}
	var next string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if next, err = c.Leader(ctx); err == nil {
			break
		}
	}
	if next == "" || next == leader {
		t.Fatalf("after killing leader %s, Leader = %q, %v", leader, next, err)
	}
	if err := c.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}
	mode, err := zkMode(ctx, c.byName[leader].Addr)
	if err != nil || mode != "follower" {
		t.Errorf("restarted %s mode %q, %v; want follower", leader, mode, err)
	}
	conn2 := zkConnect(t, []string{c.Endpoints(2).Addrs[0]})
	if v, _, err := conn2.Get("/k"); err != nil || string(v) != "v" {
		t.Errorf("GET /k after leader kill = %q, %v", v, err)
	}
}

func TestZooKeeperStandalone(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: ZooKeeper, Nodes: 1})
	ctx := ctxT(t, 10*time.Second)
	zkConnect(t, c.Endpoints(1).Addrs)
	if l, err := c.Leader(ctx); err != nil || l != "zk-1" {
		t.Errorf("Leader = %q, %v", l, err)
	}
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}
