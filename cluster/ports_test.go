package cluster

import (
	"context"
	"errors"
	"net"
	"syscall"
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

// A port taken by another server of the same kind, which answers the readiness probe as ours
// would, must not pass for ours: the run would start on a node that is not its own and see it
// "exit by itself" moments later (seen under parallel selftest runs).
func TestPortAnsweredByAnotherServer(t *testing.T) {
	t.Parallel()
	needServers(t, RedisSingle)
	port, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	launch := func() (*node, error) {
		b, err := newLocal(Spec{Topology: RedisSingle, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		c := &topo{be: b}
		t.Cleanup(func() { _ = c.be.close() })
		n := c.redisNode("redis-1", port, nil)
		n.readyTimeout = 5 * time.Second
		n.mu.Lock()
		defer n.mu.Unlock()
		return n, n.launch(context.Background(), false)
	}
	other, err := launch()
	if err != nil {
		t.Fatalf("the first server on port %d: %v", port[0], err)
	}
	defer other.kill(true)
	ours, err := launch()
	defer ours.kill(true)
	if !errors.Is(err, ErrAddrInUse) {
		t.Fatalf("launch on a port another redis-server answers = %v, want ErrAddrInUse", err)
	}
}

// ownsListener tells this process's listener from none of its group's.
func TestOwnsListener(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if !ownsListener(syscall.Getpgrp(), port) {
		t.Errorf("ownsListener(our group, %d) = false, want true: the test process listens there", port)
	}
	if ownsListener(-7, port) {
		t.Errorf("ownsListener(no group, %d) = true, want false", port)
	}
}
