package cluster

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCloseEndsAPendingRestart: Close during a Restart whose server is not ready yet does not
// wait out the readiness bound behind the node's lock: the restart gives up at once and says
// so, and Close returns.
func TestCloseEndsAPendingRestart(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: RedisSingle})
	n := c.data[0]
	n.mu.Lock()
	n.ready = func(context.Context) error { return errors.New("never ready") }
	n.readyTimeout = time.Minute
	n.mu.Unlock()
	restarted := make(chan error, 1)
	go func() { restarted <- c.Restart(context.Background(), n.Name) }()
	time.Sleep(300 * time.Millisecond) // the restart is waiting for its server by now
	t0 := time.Now()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed := time.Since(t0)
	select {
	case err := <-restarted:
		if err == nil {
			t.Errorf("Restart of a server never ready returned nil")
		}
		t.Logf("Close took %v; Restart: %v", closed.Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatalf("Restart still waiting 10 s after Close (its bound is a minute)")
	}
	if closed > 10*time.Second {
		t.Errorf("Close took %v: it waited for the pending restart", closed)
	}
}
