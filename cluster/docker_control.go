package cluster

import (
	"context"
	"fmt"
	"strings"
)

// Kill kills the node's container (SIGKILL) and waits until it stopped. The container stays, so
// its logs can be read, until Restart replaces it or Close removes it.
func (c *docker) Kill(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	n.kill(false)
	return nil
}

// Restart kills the node if it runs and starts it on the same published port. A redis node comes
// back as a fresh container, empty and a plain master; a sentinel or ZooKeeper member is the same
// container started again, with its state and data dir, as in the local backend (see
// local.Restart).
func (c *docker) Restart(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	return n.restart(ctx)
}

// Pause freezes the node's container (docker pause: every process in it stops).
func (c *docker) Pause(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	return n.pause(ctx, true)
}

// Resume unpauses a paused container.
func (c *docker) Resume(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	return n.pause(ctx, false)
}

// Master returns the current master: for redis-sentinel as the first sentinel that answers says
// (it names the node by its address on the run network), for the other redis topologies the first
// node.
func (c *docker) Master(ctx context.Context) (string, error) {
	switch c.spec.Topology {
	case RedisSentinel:
	case ZooKeeper:
		return "", fmt.Errorf("topology %s has no master (use Leader)", ZooKeeper)
	default:
		return c.data[0].Name, nil
	}
	var errs []string
	for _, s := range c.sents {
		addr, err := sentinelMasterAddr(ctx, s.Addr)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", s.Name, err))
			continue
		}
		for _, n := range c.data {
			if n.inner == addr {
				return n.Name, nil
			}
		}
		return "", fmt.Errorf("%s says the master is %s, which is none of %v", s.Name, addr, c.names())
	}
	return "", fmt.Errorf("no sentinel answered: %s", strings.Join(errs, "; "))
}

// Leader returns the ZooKeeper member whose srvr reports Mode: leader (or standalone).
func (c *docker) Leader(ctx context.Context) (string, error) {
	if c.spec.Topology != ZooKeeper {
		return "", fmt.Errorf("topology %s has no leader (only %s)", c.spec.Topology, ZooKeeper)
	}
	var errs []string
	for _, n := range c.data {
		mode, err := zkMode(ctx, n.Addr)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s: %v", n.Name, err))
		case mode == "leader" || mode == "standalone":
			return n.Name, nil
		}
	}
	return "", fmt.Errorf("no ZooKeeper leader now (%s)", strings.Join(errs, "; "))
}
