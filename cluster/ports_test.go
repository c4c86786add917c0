package cluster

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// A port taken between freePorts and the server's bind must be recognised, so Start can retry on
// fresh ports instead of failing the run.
func TestTakenPortIsRecognised(t *testing.T) {
	t.Parallel()
	needServers(t, RedisSingle)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, err := newLocal(Spec{Topology: RedisSingle, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c := &topo{be: b}
	defer c.be.close()
	n := c.redisNode("redis-1", []int{l.Addr().(*net.TCPAddr).Port}, nil)
	n.readyTimeout = 3 * time.Second
	n.mu.Lock()
	err = n.launch(context.Background(), false)
	n.mu.Unlock()
	if !errors.Is(err, ErrAddrInUse) {
		t.Fatalf("launch on a taken port = %v, want ErrAddrInUse", err)
	}
}
