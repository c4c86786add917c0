package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func etcdClient(t *testing.T, addrs []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: addrs, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func TestEtcdCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: Etcd, Clients: 2, Proxies: true})
	ctx := ctxT(t, 60*time.Second)
	if len(c.Nodes()) != 3 || c.Nodes()[0].Kind != KindEtcd {
		t.Fatalf("Nodes = %+v", c.Nodes())
	}
	cli := etcdClient(t, c.Endpoints(1).Addrs)
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := c.Master(ctx); err != nil || m != leader {
		t.Errorf("Master = %q, %v; want the leader %s", m, err, leader)
	}
	// The client's proxy to the leader is a link a fault can cut.
	if _, err := c.Link(1, leader); err != nil {
		t.Errorf("Link(1, %s): %v", leader, err)
	}

	// Kill the leader: the other two elect a new one and keep the data; the restarted member
	// rejoins with its data dir.
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
	direct := etcdClient(t, []string{c.byName[leader].Addr})
	get := func() (*clientv3.GetResponse, error) {
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return direct.Get(gctx, "k")
	}
	r, err := get()
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
		t.Errorf("GET k on the restarted %s = %v, %v", leader, r, err)
	}
}

func TestEtcdSingle(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: Etcd, Nodes: 1})
	ctx := ctxT(t, 20*time.Second)
	if l, err := c.Leader(ctx); err != nil || l != "etcd-1" {
		t.Errorf("Leader = %q, %v", l, err)
	}
	cli := etcdClient(t, c.Endpoints(1).Addrs)
	// The lease floor is 1.5 election timeouts (750 ms): a 1 s TTL is granted as asked.
	g, err := cli.Grant(ctx, 1)
	if err != nil || g.TTL != 1 {
		t.Errorf("Grant(1) = %+v, %v; want TTL 1", g, err)
	}
}

func TestEtcdSpec(t *testing.T) {
	if _, err := (Spec{Topology: Etcd, Nodes: 2}).normalize(); !errors.Is(err, ErrBadSpec) {
		t.Errorf("etcd with 2 nodes: %v, want ErrBadSpec", err)
	}
	if _, err := (Spec{Topology: Etcd, Backend: Docker}).normalize(); err != nil {
		t.Errorf("etcd on docker: %v, want it taken (lockchaos/etcd)", err)
	}
	if s, err := (Spec{Topology: Etcd}).normalize(); err != nil || s.Nodes != DefaultEtcdNodes {
		t.Errorf("normalize(etcd) = %+v, %v", s, err)
	}
}
