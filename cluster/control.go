package cluster

import (
	"context"
	"fmt"
	"syscall"
)

// Kill SIGKILLs the node's process group and waits until it is gone.
func (c *local) Kill(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	n.kill(false)
	return nil
}

// Restart kills the node if it runs, starts it on the same address and waits until it is ready.
// A redis node comes back empty, as a plain master (also a former replica: Sentinel decides what
// it becomes). A ZooKeeper member keeps its data dir: a ZooKeeper restart is a process restart,
// since an empty member rejoining would be a different fault (lost disk) that ZooKeeper does not
// claim to survive.
func (c *local) Restart(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	return n.restart(ctx, c.sp)
}

// Pause stops the node's process group with SIGSTOP.
func (c *local) Pause(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	return n.signal(syscall.SIGSTOP)
}

// Resume continues a paused node with SIGCONT.
func (c *local) Resume(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	return n.signal(syscall.SIGCONT)
}

// Master returns the current master: for redis-sentinel as the first sentinel that answers says,
// for the other redis topologies the first node.
func (c *local) Master(ctx context.Context) (string, error) {
	if l, ok, err := c.extraLeader(ctx); ok {
		return l, err
	}
	switch c.spec.Topology {
	case RedisSentinel:
		return c.sentinelMaster(ctx)
	case ZooKeeper:
		return "", fmt.Errorf("topology %s has no master (use Leader)", ZooKeeper)
	}
	return c.data[0].Name, nil
}

// Leader returns the ZooKeeper member whose srvr reports Mode: leader (or standalone).
func (c *local) Leader(ctx context.Context) (string, error) {
	if l, ok, err := c.extraLeader(ctx); ok {
		return l, err
	}
	if c.spec.Topology != ZooKeeper {
		return "", fmt.Errorf("topology %s has no leader (only %s)", c.spec.Topology, ZooKeeper)
	}
	return c.zkLeader(ctx)
}
