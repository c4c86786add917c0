// Package external is lockchaos's external backend: servers someone else runs, listed in a cluster
// file (cluster.ExternalFile, --cluster FILE; docs/external.md), faulted through toxiproxy-servers
// next to them and the file's commands. Import it (blank) to start runs with Backend "external".
package external

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
)

func init() {
	cluster.RegisterBackend(cluster.External, prepare, func() []cluster.Requirement { return nil })
}

// backend is the external backend. lockchaos starts and stops nothing of theirs: a node's "start"
// is a readiness check (cluster.Attacher), its process faults are the file's commands
// (command.go), and its links are proxies lockchaos creates on the toxiproxy-server next to it
// (proxy.go) and removes at Close, with the run's keys (clean.go).
type backend struct {
	spec cluster.Spec
	file *cluster.ExternalFile
	id   string

	mu sync.Mutex
	// left says which nodes the run's last command on them left killed or paused, so that
	// Close can bring them back: the servers are someone else's.
	left map[string]string
}

// prepare is Start's part for the external backend: the file, every node and toxiproxy API
// reachable, and what killed runs of this host left (proxies, keys) removed. Nothing of this run
// is created before it returns. Its requirements are none: the servers are someone else's.
func prepare(ctx context.Context, spec cluster.Spec) (cluster.Spec, func(context.Context) (cluster.Backend, error), error) {
	f := spec.External
	if f == nil {
		return spec, nil, fmt.Errorf("%w: backend external needs a cluster file (--cluster FILE, see docs/external.md)", cluster.ErrBadSpec)
	}
	topology, err := f.Topology()
	if err != nil {
		return spec, nil, fmt.Errorf("%w: cluster file %s: %w", cluster.ErrBadSpec, f.Path, err)
	}
	if topology != spec.Topology {
		return spec, nil, fmt.Errorf("%w: cluster file %s holds a %s cluster, the run needs %s (point --cluster at a %s cluster)", cluster.ErrBadSpec, f.Path, topology, spec.Topology, spec.Topology)
	}
	if err := Reachable(ctx, f); err != nil {
		return spec, nil, err
	}
	if spec.RunID == "" {
		spec.RunID = NewRunID()
	}
	cleanStale(ctx, f, spec.Log)
	cleanStaleData(ctx, f, spec.Log)
	return spec, func(context.Context) (cluster.Backend, error) {
		return &backend{spec: spec, file: f, id: spec.RunID, left: map[string]string{}}, nil
	}, nil
}

func (b *backend) Name() string           { return cluster.External }
func (b *backend) RunID() string          { return b.id }
func (b *backend) Ports(cluster.Kind) int { return 0 }

func (b *backend) Machine(s *cluster.Server) cluster.Machine {
	// A node is up at start: the check only proves it answers. After a restart command the
	// server may take as long as a real one takes to come back.
	fn, _ := b.file.Node(s.Name())
	s.SetAddrs(fn.Address, fn.Address, 30*time.Second)
	return &machine{}
}

func (b *backend) ReplicationListen() (string, error) {
	return "", fmt.Errorf("%w: the external backend has no replication link", cluster.ErrBadSpec)
}

func (b *backend) Close() error { return nil }

// Attached lists the file's nodes: Start only waits until each answers.
func (b *backend) Attached() []cluster.ExternalNode { return b.file.Nodes }

func (b *backend) RemoteLinks() cluster.RemoteLinks { return newRemoteProxies(b.file, b.id) }

// The external backend has every extra ability: a mismatch would silently lose one.
var _ interface {
	cluster.Backend
	cluster.Attacher
	cluster.RemoteLinker
	cluster.Controller
	cluster.Restorer
	cluster.DataRemover
} = (*backend)(nil)

// machine is someone else's server: lockchaos neither starts nor stops it.
type machine struct{ started bool }

func (m *machine) Start(context.Context, bool) error      { m.started = true; return nil }
func (m *machine) Dead(context.Context, int, error) error { return nil }
func (m *machine) Exited() <-chan struct{}                { return nil }
func (m *machine) Failed(err error) error                 { return err }
func (m *machine) Watch()                                 {}
func (m *machine) Stop()                                  {}
func (m *machine) Release()                               {}
func (m *machine) SaveLog(io.Writer) (bool, error)        { return false, nil }
func (m *machine) Running() bool                          { return m.started }
func (m *machine) Pause(bool) error {
	return fmt.Errorf("pause goes through the cluster file's commands")
}

// noteLeft records the state a command left node in: "kill" and "pause" need undoing at Close,
// "restart" and "resume" undid it.
func (b *backend) noteLeft(node, ctl string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ctl {
	case "kill", "pause":
		b.left[node] = ctl
	default:
		delete(b.left, node)
	}
}

// Restore brings back what the run left killed (with the restart command) or paused (resume).
// A node killed with no restart command stays down, and the error says so.
func (b *backend) Restore(ctx context.Context) error {
	b.mu.Lock()
	left := b.left
	b.left = map[string]string{}
	b.mu.Unlock()
	var errs []error
	for node, state := range left {
		undo := map[string]string{"kill": "restart", "pause": "resume"}[state]
		if n, _ := b.file.Node(node); command(n, undo) == "" {
			errs = append(errs, fmt.Errorf("node %s was killed by the run and is still down (add restart: to cluster file %s to have lockchaos bring it back)", node, b.file.Path))
			continue
		}
		if err := b.runCommand(ctx, node, undo); err != nil {
			errs = append(errs, fmt.Errorf("bring back %s: %w", node, err))
		}
	}
	return errors.Join(errs...)
}
