package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// NoServers, set to 1 in the environment, makes Start refuse to start any server (local processes,
// docker containers), as if none were installed (an ErrMissingBinary): `make test-short` sets it,
// so its tests — unit tests only — provably start none.
const NoServers = "LOCKCHAOS_NO_SERVERS"

// Start validates spec and starts the cluster it describes. Errors wrap ErrBadSpec or
// ErrMissingBinary when the fix is on the caller's side. On error nothing is left running and the
// run directory is removed. The caller must Close the returned cluster.
func Start(ctx context.Context, spec Spec) (Cluster, error) {
	spec, err := spec.normalize()
	if err != nil {
		return nil, err
	}
	var open func(ctx context.Context) (backend, error) // one backend per attempt
	where := ""
	off := fmt.Errorf("%w: servers are off (%s=1, as make test-short sets)", ErrMissingBinary, NoServers)
	switch spec.Backend {
	case Local:
		if err := checkBinaries(spec.Topology); err != nil {
			return nil, err
		}
		if os.Getenv(NoServers) == "1" {
			return nil, off
		}
		open = func(context.Context) (backend, error) { return newLocal(spec) }
	default: // a backend of its own package (cluster/docker, cluster/external), registered by its init
		rb, ok := backendRegistry[spec.Backend]
		if !ok && backendPackages[spec.Backend] == "" {
			return nil, fmt.Errorf("%w: backend %q is unknown (use local, docker or external)", ErrBadSpec, spec.Backend)
		}
		// External starts no server: the servers are someone else's.
		if os.Getenv(NoServers) == "1" && spec.Backend != External {
			return nil, off
		}
		if !ok {
			return nil, notLinked(spec.Backend)
		}
		var openSPI func(context.Context) (Backend, error)
		if spec, openSPI, err = rb.prepare(ctx, spec); err != nil {
			return nil, err
		}
		open = func(ctx context.Context) (backend, error) {
			b, err := openSPI(ctx)
			if err != nil {
				return nil, err
			}
			return spiBackend{b}, nil
		}
		where = " on " + spec.Backend
	}
	for attempt := 1; ; attempt++ {
		c, err := startTopo(ctx, spec, open)
		if err == nil {
			return c, nil
		}
		// A port chosen by freePorts can be taken by another process before our server binds
		// it; that is not the user's problem, so start again on fresh ports.
		if !errors.Is(err, ErrAddrInUse) || attempt == 3 {
			return nil, fmt.Errorf("start %s cluster%s: %w", spec.Topology, where, err)
		}
	}
}

// topo is a running cluster: the topology layer over a backend.
type topo struct {
	spec   Spec
	be     backend
	data   []*node // data nodes, in Nodes order
	sents  []*node // redis-sentinel only
	byName map[string]*node
	px     *proxies
	// spi is the registered Backend be adapts (nil on local): the core finds its extra abilities
	// (spi_abilities.go) on it.
	spi Backend
	rp  RemoteLinks // a RemoteLinker's (external): the proxies on the file's toxiproxy-servers
	// started is set once every node answered: only then may Close remove an external run's
	// keys (a failed start wrote none, and its nodes may not even be reachable).
	started bool
	eps     []Endpoints // eps[c] for client c; eps[0] holds the direct addresses
	// replMaster names the node the replica replicates from (redis-sentinel).
	replMaster string

	logMu sync.Mutex // Spec.Log need not be safe for concurrent writes

	closeOnce sync.Once
	closeErr  error
	// closing is cancelled when Close begins (nil for a topo not made by startTopo).
	closing     context.Context
	cancelClose context.CancelFunc
}

func startTopo(ctx context.Context, spec Spec, open func(context.Context) (backend, error)) (_ *topo, err error) {
	be, err := open(ctx)
	if err != nil {
		return nil, err
	}
	c := &topo{spec: spec, be: be, byName: map[string]*node{}, px: newProxies()}
	c.closing, c.cancelClose = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if a, ok := be.(spiBackend); ok {
		c.spi = a.b
	}
	if rl, ok := c.spi.(RemoteLinker); ok {
		c.rp = rl.RemoteLinks()
	}
	if a, ok := c.spi.(Attacher); ok {
		err = c.startAttached(ctx, a.Attached())
	} else {
		err = c.startServers(ctx)
	}
	if err != nil {
		return nil, err
	}
	c.started = true
	if err := c.buildEndpoints(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// newNode makes a node of the backend on ports (from portsFor).
func (c *topo) newNode(name string, kind Kind, ports []int, srv server) *node {
	n := &node{Node: Node{Name: name, Kind: kind}, ports: ports, srv: srv}
	if c.spec.Log != nil || c.spec.OnExit != nil {
		n.report = func(line, tail string) { c.died(n.Name, line, tail) }
	}
	n.m = c.be.machine(n)
	return n
}

// portsFor picks free host ports for nodes of the given kinds, one slice per node.
func (c *topo) portsFor(kinds ...Kind) ([][]int, error) {
	total := 0
	for _, k := range kinds {
		total += c.be.ports(k)
	}
	all, err := freePorts(total)
	if err != nil {
		return nil, err
	}
	out := make([][]int, len(kinds))
	for i, k := range kinds {
		out[i], all = all[:c.be.ports(k)], all[c.be.ports(k):]
	}
	return out, nil
}

func repeat(k Kind, n int) []Kind {
	out := make([]Kind, n)
	for i := range out {
		out[i] = k
	}
	return out
}

func (c *topo) add(n *node) {
	c.byName[n.Name] = n
	if n.Kind == KindSentinel {
		c.sents = append(c.sents, n)
	} else {
		c.data = append(c.data, n)
	}
}

// launchAll starts nodes in parallel: a ZooKeeper member cannot become ready before a quorum of
// its peers runs, and parallel starts keep redis-multi fast.
func (c *topo) launchAll(ctx context.Context, ns []*node) error {
	errs := make([]error, len(ns))
	var wg sync.WaitGroup
	for i, n := range ns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.mu.Lock()
			defer n.mu.Unlock()
			errs[i] = n.launch(ctx, false)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close stops every server (local: SIGKILL to each process group; docker: removes every
// container of the run, found by its label, so also one whose start failed half way; external:
// none, they are someone else's), stops the proxies (external: deletes them, with their toxics,
// from the toxiproxy-servers) and removes the run directory or network. It is idempotent and safe after a failed
// start.
func (c *topo) Close() error {
	c.closeOnce.Do(func() {
		if c.cancelClose != nil {
			c.cancelClose() // a Restart still waiting for its server gives up (untilClose)
		}
		var wg sync.WaitGroup
		for _, n := range c.byName {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n.close()
			}()
		}
		wg.Wait()
		c.px.stopAll()
		c.closeErr = errors.Join(c.closeAttached(), c.be.close())
	})
	return c.closeErr
}

// SavedLogMax bounds each server log SaveLogs writes: its last MiB (Machine.SaveLog).
const SavedLogMax = 1 << 20

// SaveLogs writes each server's output so far to dir/<node>.log, creating dir. The external
// backend's servers are someone else's: it writes none.
func (c *topo) SaveLogs(dir string) error {
	var errs []error
	for _, name := range c.names() {
		if err := c.byName[name].saveLog(dir); err != nil {
			errs = append(errs, fmt.Errorf("save the log of %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// died says on Spec.Log that node name's server died by itself (line says how, tail is its log's
// end), and tells Spec.OnExit.
func (c *topo) died(name, line, tail string) {
	msg := "lockchaos: " + line + "\n"
	if tail = strings.Trim(tail, "\n"); tail != "" {
		msg += tail + "\n"
	}
	c.report(msg)
	if c.spec.OnExit != nil {
		c.spec.OnExit(name, line)
	}
}

// report writes to Spec.Log.
func (c *topo) report(s string) {
	if c.spec.Log == nil {
		return
	}
	c.logMu.Lock()
	defer c.logMu.Unlock()
	_, _ = io.WriteString(c.spec.Log, s)
}
