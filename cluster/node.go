package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// errAddrInUse marks a start that failed because a port picked by freePort was taken meanwhile;
// Start retries the whole cluster on fresh ports.
var errAddrInUse = errors.New("address already in use")

// node is one server process and how to (re)start it.
type node struct {
	Node
	port    int
	dir     string // the node's own directory inside the run dir
	logPath string
	// prepare writes the node's config before each start; restart says it is a Restart (redis:
	// start empty as a plain master; ZooKeeper: keep the data dir).
	prepare func(restart bool) ([]string, error)
	// ready returns nil once the server answers as it should.
	ready        func(ctx context.Context) error
	readyTimeout time.Duration

	mu sync.Mutex
	p  *proc
	// restarted says the running process came from Restart (guarded by mu; ready reads it to
	// skip checks that only hold for a fresh cluster).
	restarted bool
	// closed is set by Close so that a Restart racing with it cannot leave a server behind.
	closed bool
	// report receives one line (and the log tail) when the server dies by itself; may be nil.
	report func(string)
}

func newNode(runDir, name string, kind Kind, port int) *node {
	dir := filepath.Join(runDir, name)
	return &node{
		Node:         Node{Name: name, Kind: kind, Addr: localAddr(port)},
		port:         port,
		dir:          dir,
		logPath:      filepath.Join(dir, name+".log"),
		readyTimeout: 15 * time.Second,
	}
}

// launch starts the process and waits until it is ready. Call with n.mu held.
func (n *node) launch(ctx context.Context, sp *spawner, restart bool) error {
	n.restarted = restart
	argv, err := n.prepare(restart)
	if err != nil {
		return fmt.Errorf("%s: write config: %w", n.Name, err)
	}
	if n.closed {
		return fmt.Errorf("%s: %w", n.Name, errSpawnerClosed)
	}
	var onCrash func(error)
	if n.report != nil {
		onCrash = func(err error) {
			n.report(fmt.Sprintf("lockchaos: %s (%s) exited by itself: %v\n%s\n", n.Name, n.Addr, err, logTail(n.logPath, 15)))
		}
	}
	p, err := spawn(sp, n.dir, n.logPath, argv, onCrash)
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	n.p = p
	if err := n.waitReady(ctx); err != nil {
		p.kill() // expected: no crash report, the error says it all
		if logSays(n.logPath, "ddress already in use") {
			err = fmt.Errorf("%w (%w)", err, errAddrInUse)
		}
		return withLog(fmt.Errorf("%s (%s) did not start: %w", n.Name, n.Addr, err), n.logPath)
	}
	p.quiet.Store(false)
	return nil
}

func (n *node) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, n.readyTimeout)
	defer cancel()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if n.p.exited() {
			return fmt.Errorf("process exited: %v", n.p.err)
		}
		if last = n.ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %w", n.readyTimeout, last)
		case <-tick.C:
		case <-n.p.done:
		}
	}
}

func (n *node) kill(closing bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = n.closed || closing
	if n.p != nil {
		n.p.kill()
	}
}

func (n *node) restart(ctx context.Context, sp *spawner) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.p != nil {
		n.p.kill()
	}
	return n.launch(ctx, sp, true)
}

func (n *node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.p == nil {
		return fmt.Errorf("%s is not running", n.Name)
	}
	if err := n.p.signal(sig); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}
