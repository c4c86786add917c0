package cluster

import (
	"context"
	"fmt"
)

// Kill stops the node with SIGKILL and waits until it is gone (docker: kills the container, which
// stays, so its logs can be read, until Restart replaces it or Close removes it; external: runs
// the node's kill command).
func (c *topo) Kill(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	if done, err := c.control(ctx, n, "kill"); done {
		return err
	}
	n.kill(false)
	return nil
}

// Restart kills the node if it runs, starts it on the same address and waits until it is ready.
// A redis node comes back empty, as a plain master (also a former replica: Sentinel decides what
// it becomes; docker: a fresh container). A sentinel keeps its state, and a ZooKeeper member its
// data dir (docker: the same container started again): a ZooKeeper restart is a process restart,
// since an empty member rejoining would be a different fault (lost disk) that ZooKeeper does not
// claim to survive. External: runs the node's restart command, then waits until it answers.
func (c *topo) Restart(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	ctx, cancel := c.untilClose(ctx)
	defer cancel()
	if done, err := c.control(ctx, n, "restart"); done {
		return err
	}
	return n.restart(ctx)
}

// untilClose returns ctx, also cancelled when Close begins: a restart waiting for its server
// holds the node's lock, and Close, which takes it, would wait out the readiness bound (45 s for
// PostgreSQL: a run's end once did, against a container the restart had not brought back).
func (c *topo) untilClose(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if c.closing == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(c.closing, cancel)
	return ctx, func() { stop(); cancel() }
}

// Pause stops the node's process group with SIGSTOP (docker pause: every process in the
// container stops; external: the node's pause command).
func (c *topo) Pause(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	if done, err := c.control(ctx, n, "pause"); done {
		return err
	}
	return n.pause(true)
}

// Resume continues a paused node (SIGCONT; docker unpause; external: the resume command).
func (c *topo) Resume(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	if done, err := c.control(ctx, n, "resume"); done {
		return err
	}
	return n.pause(false)
}

// control runs a process fault the backend's own way when it is a Controller (external: the
// cluster file's command; a restart then waits until the server answers again); false: the node
// does it through its machine.
func (c *topo) control(ctx context.Context, n *node, ctl string) (bool, error) {
	b, ok := c.spi.(Controller)
	if !ok {
		return false, nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return true, fmt.Errorf("%s: %w", n.Name, errSpawnerClosed)
	}
	if err := b.Control(ctx, n.Name, ctl); err != nil {
		return true, err
	}
	if ctl != "restart" {
		return true, nil
	}
	n.restarted = true
	if err := n.waitReady(ctx); err != nil {
		return true, fmt.Errorf("%s (%s) after its restart command: %w", n.Name, n.Addr, err)
	}
	return true, nil
}
