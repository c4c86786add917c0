package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ErrAddrInUse marks a start that failed because a port picked for it was taken meanwhile; Start
// retries the whole cluster on fresh ports. A Machine wraps it in Start's error.
var ErrAddrInUse = errors.New("address already in use")

// node is one server and how to (re)start it; m does the backend's part.
type node struct {
	Node         // Addr: where the harness reaches the server
	inner string // where other nodes reach it, and how Sentinel names it (local: Addr)
	ports []int  // free host ports picked for it (backend.ports)
	srv   server
	m     Machine
	// ready returns nil once the server answers as it should.
	ready        func(ctx context.Context) error
	readyTimeout time.Duration
	// report receives one line saying how (and the log's tail) when the server dies by itself;
	// may be nil.
	report func(line, tail string)

	mu sync.Mutex
	// restarted says the running server came from Restart (guarded by mu; ready reads it to skip
	// checks that only hold for a fresh cluster, and backends to keep a node's state).
	restarted bool
	// closed is set by Close so that a Restart racing with it cannot leave a server behind.
	closed bool
}

// launch starts the server and waits until it is ready. Call with n.mu held.
func (n *node) launch(ctx context.Context, restart bool) error {
	if n.closed {
		return fmt.Errorf("%s: %w", n.Name, errSpawnerClosed)
	}
	n.restarted = restart
	if err := n.m.Start(ctx, restart); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	if err := n.waitReady(ctx); err != nil {
		// Expected: no crash report, the error says it all.
		return n.m.Failed(fmt.Errorf("%s (%s) did not start: %w", n.Name, n.Addr, err))
	}
	n.m.Watch()
	return nil
}

// ownAnswerer is a Machine that can tell whether the server that answered the readiness probe is
// its own (the local backend's process: owner.go).
type ownAnswerer interface {
	// answered returns an error wrapping ErrAddrInUse when another process answered on the port.
	answered() error
}

func (n *node) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, n.readyTimeout)
	defer cancel()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var last error
	for try := 0; ; try++ {
		if last = n.ready(ctx); last == nil {
			if o, ok := n.m.(ownAnswerer); ok {
				return o.answered()
			}
			return nil
		}
		if err := n.m.Dead(ctx, try, last); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %w", n.readyTimeout, last)
		case <-tick.C:
		case <-n.m.Exited():
		}
	}
}

// kill stops the server; closing (from Close) also keeps it from starting again.
func (n *node) kill(closing bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = n.closed || closing
	n.m.Stop()
}

// close is a node's part of Close.
func (n *node) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	n.m.Release()
}

func (n *node) restart(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.m.Stop()
	return n.launch(ctx, true)
}

// saveLog writes the server's output so far to dir/<node>.log; nothing when the backend keeps none.
func (n *node) saveLog(dir string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var b bytes.Buffer
	ok, err := n.m.SaveLog(&b)
	if err != nil || !ok {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, n.Name+".log"), b.Bytes(), 0o644)
}

func (n *node) pause(on bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.m.Running() {
		return fmt.Errorf("%s is not running", n.Name)
	}
	if err := n.m.Pause(on); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}
