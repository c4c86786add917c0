package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The core's part of a backend on servers someone else runs (cluster/external): it starts none
// of them, only waits until each answers (Attacher); it runs process faults through the backend
// (Controller); and Close brings back what the run left down (Restorer), removes the run's remote
// links and then its data (DataRemover). The backend decides how; the core, when.

// startAttached adds the nodes an Attacher lists and waits until each answers its protocol's ping.
func (c *topo) startAttached(ctx context.Context, ns []ExternalNode) error {
	for _, fn := range ns {
		n := c.newNode(fn.Name, fn.Kind, nil, server{})
		n.Addr, n.inner = fn.Address, fn.Address
		n.ready = fn.Ping
		c.add(n)
	}
	if err := c.launchAll(ctx, append(append([]*node{}, c.data...), c.sents...)); err != nil {
		path := ""
		if c.spec.External != nil {
			path = c.spec.External.Path
		}
		return fmt.Errorf("%w: %w (is every node the kind the cluster file %s says?)", ErrBadSpec, err, path)
	}
	return nil
}

// straggleGap is how long Close waits before it deletes the run's keys a second time: a command a
// closed client wrote just before it closed (a waiter's SETNX) may still land after the first pass.
const straggleGap = 250 * time.Millisecond

// closeAttached is Close's part for a backend on someone else's servers (nil for the others):
// the nodes the run left killed or paused are brought back; the run's remote proxies go (which
// cuts every proxied client connection and drops what the proxies still hold), then its keys,
// twice. What fails is also said on Spec.Log, since callers often defer Close and drop its error.
func (c *topo) closeAttached() error {
	r, restores := c.spi.(Restorer)
	d, removes := c.spi.(DataRemover)
	if !restores && !removes && c.rp == nil {
		return nil
	}
	var err error
	if restores {
		err = r.Restore(context.Background())
	}
	if c.rp != nil {
		err = errors.Join(err, c.rp.RemoveAll())
	}
	if removes && c.started {
		err = errors.Join(err, d.RemoveRunData(context.Background()))
		time.Sleep(straggleGap)
		err = errors.Join(err, d.RemoveRunData(context.Background()))
	}
	if err != nil {
		c.report(fmt.Sprintf("lockchaos: cleaning up the external cluster: %v\n", err))
	}
	return err
}
