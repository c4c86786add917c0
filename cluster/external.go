package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// external is the external backend: servers someone else runs, listed in a cluster file. lockchaos
// starts and stops nothing of theirs: a node's "start" is a readiness check, its process faults
// are the file's commands (externalcmd.go), and its links are proxies lockchaos creates on the
// toxiproxy-server next to it (external_proxy.go) and removes at Close.
type external struct {
	spec Spec
	file *ExternalFile
	id   string

	mu sync.Mutex
	// left says which nodes the run's last command on them left killed or paused, so that
	// Close can bring them back: the servers are someone else's.
	left map[string]string
}

// prepareExternal is Start's part for the external backend: the file, every node and toxiproxy
// API reachable, and what killed runs of this host left (proxies, keys) removed. Nothing of this
// run is created before it returns.
func prepareExternal(ctx context.Context, spec Spec) (Spec, func(context.Context) (backend, error), error) {
	f := spec.External
	if f == nil {
		return spec, nil, fmt.Errorf("%w: backend external needs a cluster file (--cluster FILE, see docs/external.md)", ErrBadSpec)
	}
	topology, err := f.Topology()
	if err != nil {
		return spec, nil, fmt.Errorf("%w: cluster file %s: %w", ErrBadSpec, f.Path, err)
	}
	if topology != spec.Topology {
		return spec, nil, fmt.Errorf("%w: cluster file %s holds a %s cluster, the run needs %s (point --cluster at a %s cluster)", ErrBadSpec, f.Path, topology, spec.Topology, spec.Topology)
	}
	if err := Reachable(ctx, f); err != nil {
		return spec, nil, err
	}
	if spec.RunID == "" {
		spec.RunID = NewRunID()
	}
	cleanStale(ctx, f, spec.Log)
	cleanStaleData(ctx, f, spec.Log)
	return spec, func(context.Context) (backend, error) {
		return &external{spec: spec, file: f, id: spec.RunID, left: map[string]string{}}, nil
	}, nil
}

func (b *external) name() string   { return External }
func (b *external) runID() string  { return b.id }
func (b *external) ports(Kind) int { return 0 }

func (b *external) machine(n *node) Machine {
	// A node is up at start: the check only proves it answers. After a restart command the
	// server may take as long as a real one takes to come back.
	n.readyTimeout = 30 * time.Second
	return &externalNode{}
}

func (b *external) replicationListen() (string, error) {
	return "", fmt.Errorf("%w: the external backend has no replication link", ErrBadSpec)
}

func (b *external) close() error { return nil }

func (b *external) remoteLinks() *remoteProxies { return newRemoteProxies(b.file, b.id) }

// The external backend has every extra ability: a mismatch would silently lose one.
var _ interface {
	remoteLinker
	controller
	restorer
} = (*external)(nil)

// externalNode is someone else's server: lockchaos neither starts nor stops it.
type externalNode struct{ started bool }

func (m *externalNode) Start(context.Context, bool) error      { m.started = true; return nil }
func (m *externalNode) Dead(context.Context, int, error) error { return nil }
func (m *externalNode) Exited() <-chan struct{}                { return nil }
func (m *externalNode) Failed(err error) error                 { return err }
func (m *externalNode) Watch()                                 {}
func (m *externalNode) Stop()                                  {}
func (m *externalNode) Release()                               {}
func (m *externalNode) SaveLog(io.Writer) (bool, error)        { return false, nil }
func (m *externalNode) Running() bool                          { return m.started }
func (m *externalNode) Pause(bool) error {
	return fmt.Errorf("pause goes through the cluster file's commands")
}

// startExternal adds the file's nodes and waits until each answers its protocol's ping.
func (c *topo) startExternal(ctx context.Context) error {
	for _, fn := range c.spec.External.Nodes {
		n := c.newNode(fn.Name, fn.Kind, nil, server{})
		n.Addr, n.inner = fn.Address, fn.Address
		n.ready = pinger(fn)
		c.add(n)
	}
	if err := c.launchAll(ctx, append(append([]*node{}, c.data...), c.sents...)); err != nil {
		return fmt.Errorf("%w: %w (is every node the kind the cluster file %s says?)", ErrBadSpec, err, c.spec.External.Path)
	}
	return nil
}

// pinger is the readiness check of a cluster file's server: its protocol's ping, and for a SQL
// server a session of the file's login.
func pinger(n ExternalNode) func(ctx context.Context) error {
	addr := n.Address
	switch n.Kind {
	case KindZooKeeper:
		return func(ctx context.Context) error { return zkServing(ctx, addr) }
	case KindEtcd:
		return func(ctx context.Context) error { return etcdHealthy(ctx, addr) }
	case KindPostgres:
		return func(ctx context.Context) error { return pgPing(ctx, addr, n.login()) }
	case KindMariaDB:
		return func(ctx context.Context) error { return mariadbPing(ctx, addr, n.login()) }
	}
	return func(ctx context.Context) error { return redisPing(ctx, addr) }
}

// noteLeft records the state a command left node in: "kill" and "pause" need undoing at Close,
// "restart" and "resume" undid it.
func (b *external) noteLeft(node, ctl string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ctl {
	case "kill", "pause":
		b.left[node] = ctl
	default:
		delete(b.left, node)
	}
}

// restore brings back what the run left killed (with the restart command) or paused (resume).
// A node killed with no restart command stays down, and the error says so.
func (b *external) restore(ctx context.Context) error {
	b.mu.Lock()
	left := b.left
	b.left = map[string]string{}
	b.mu.Unlock()
	var errs []error
	for node, state := range left {
		undo := map[string]string{"kill": "restart", "pause": "resume"}[state]
		if n, _ := b.file.Node(node); n.command(undo) == "" {
			errs = append(errs, fmt.Errorf("node %s was killed by the run and is still down (add restart: to cluster file %s to have lockchaos bring it back)", node, b.file.Path))
			continue
		}
		if err := b.runCommand(ctx, node, undo); err != nil {
			errs = append(errs, fmt.Errorf("bring back %s: %w", node, err))
		}
	}
	return errors.Join(errs...)
}
