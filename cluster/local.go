package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// Start validates spec and starts the cluster it describes. Errors wrap ErrBadSpec or
// ErrMissingBinary when the fix is on the caller's side. On error nothing is left running and the
// run directory is removed. The caller must Close the returned cluster.
func Start(ctx context.Context, spec Spec) (Cluster, error) {
	spec, err := spec.normalize()
	if err != nil {
		return nil, err
	}
	switch spec.Backend {
	case Local:
	case Docker:
		return startDocker(ctx, spec)
	default:
		return nil, fmt.Errorf("%w: backend %q is not implemented yet (use --backend local)", ErrBadSpec, spec.Backend)
	}
	if err := checkBinaries(spec.Topology); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		c, err := startLocal(ctx, spec)
		if err == nil {
			return c, nil
		}
		// A port chosen by freePort can be taken by another process before our server binds
		// it; that is not the user's problem, so start again on fresh ports.
		if !errors.Is(err, errAddrInUse) || attempt == 3 {
			return nil, fmt.Errorf("start %s cluster: %w", spec.Topology, err)
		}
	}
}

// local is the local backend: servers are child processes of the harness.
type local struct {
	spec   Spec
	dir    string
	sp     *spawner
	data   []*node // data nodes, in Nodes order
	sents  []*node // redis-sentinel only
	byName map[string]*node
	px     *proxies
	eps    []Endpoints // eps[c] for client c; eps[0] holds the direct addresses
	// replMaster names the node the replica replicates from (redis-sentinel).
	replMaster string

	logMu sync.Mutex // Spec.Log need not be safe for concurrent writes

	closeOnce sync.Once
	closeErr  error
}

func startLocal(ctx context.Context, spec Spec) (_ *local, err error) {
	dir, err := os.MkdirTemp(spec.Dir, "lockchaos-"+spec.Topology+"-")
	if err != nil {
		return nil, fmt.Errorf("make run dir under %s: %w", spec.Dir, err)
	}
	c := &local{spec: spec, dir: dir, sp: newSpawner(), byName: map[string]*node{}, px: newProxies()}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	switch spec.Topology {
	case RedisSingle, RedisMulti:
		err = c.startRedisMasters(ctx)
	case RedisSentinel:
		err = c.startSentinelTopology(ctx)
	case ZooKeeper:
		err = c.startZooKeeper(ctx)
	default:
		err = c.startExtra(ctx)
	}
	if err != nil {
		return nil, err
	}
	if err := c.buildEndpoints(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *local) add(n *node) {
	if c.spec.Log != nil {
		n.report = c.report
	}
	c.byName[n.Name] = n
	if n.Kind == KindSentinel {
		c.sents = append(c.sents, n)
	} else {
		c.data = append(c.data, n)
	}
}

// launchAll starts nodes in parallel: a ZooKeeper member cannot become ready before a quorum of
// its peers runs, and parallel starts keep redis-multi fast.
func (c *local) launchAll(ctx context.Context, ns []*node) error {
	errs := make([]error, len(ns))
	var wg sync.WaitGroup
	for i, n := range ns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.mu.Lock()
			defer n.mu.Unlock()
			errs[i] = n.launch(ctx, c.sp, false)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// buildEndpoints makes one proxy per client per data node and sentinel when proxies are on.
func (c *local) buildEndpoints() error {
	direct := Endpoints{}
	for _, n := range c.data {
		direct.Addrs = append(direct.Addrs, n.Addr)
	}
	for _, n := range c.sents {
		direct.SentinelAddrs = append(direct.SentinelAddrs, n.Addr)
	}
	if c.spec.Topology == RedisSentinel {
		direct.MasterName = sentinelMasterName
	}
	c.eps = []Endpoints{direct}
	for cl := 1; cl <= c.spec.Clients; cl++ {
		if !c.spec.Proxies {
			c.eps = append(c.eps, direct)
			continue
		}
		e := Endpoints{MasterName: direct.MasterName}
		route := map[string]string{}
		for _, n := range append(append([]*node{}, c.data...), c.sents...) {
			addr, err := c.px.add(linkKey{cl, n.Name}, n.Addr)
			if err != nil {
				return err
			}
			route[n.Addr] = addr
			if n.Kind == KindSentinel {
				e.SentinelAddrs = append(e.SentinelAddrs, addr)
			} else {
				e.Addrs = append(e.Addrs, addr)
			}
		}
		e.Dial = dialer(route)
		c.eps = append(c.eps, e)
	}
	return nil
}

// Topology returns the spec's topology.
func (c *local) Topology() string { return c.spec.Topology }

// Dir returns the run directory, where each server keeps its config and log.
func (c *local) Dir() string { return c.dir }

// Nodes lists the data nodes, then the sentinels.
func (c *local) Nodes() []Node {
	out := make([]Node, 0, len(c.data)+len(c.sents))
	for _, n := range c.data {
		out = append(out, n.Node)
	}
	for _, n := range c.sents {
		out = append(out, n.Node)
	}
	return out
}

// Endpoints returns client cl's addresses. Any cl outside 1..Clients (0 by convention) gets the
// direct addresses, which link faults do not touch: meant for the harness's own checks.
func (c *local) Endpoints(cl int) Endpoints {
	if cl < 1 || cl >= len(c.eps) {
		cl = 0
	}
	e := c.eps[cl]
	e.Addrs = append([]string(nil), e.Addrs...)
	e.SentinelAddrs = append([]string(nil), e.SentinelAddrs...)
	return e
}

// Link returns the proxy between client cl and node.
func (c *local) Link(cl int, node string) (*toxiproxy.Proxy, error) {
	if !c.spec.Proxies {
		return nil, ErrProxiesOff
	}
	if _, ok := c.byName[node]; !ok {
		return nil, fmt.Errorf("%w %q (have %v)", ErrUnknownNode, node, c.names())
	}
	p, _, ok := c.px.get(linkKey{cl, node})
	if !ok {
		return nil, fmt.Errorf("no link from client %d to %s (clients are 1..%d)", cl, node, c.spec.Clients)
	}
	return p, nil
}

// ReplicationLink returns the proxy the replica reaches the master through (redis-sentinel).
func (c *local) ReplicationLink() (*toxiproxy.Proxy, error) {
	if c.spec.Topology != RedisSentinel {
		return nil, fmt.Errorf("topology %s has no replication link (only %s)", c.spec.Topology, RedisSentinel)
	}
	p, _, _ := c.px.get(linkKey{0, c.replMaster})
	return p, nil
}

func (c *local) node(name string) (*node, error) {
	n, ok := c.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (have %v)", ErrUnknownNode, name, c.names())
	}
	return n, nil
}

func (c *local) names() []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.Name)
	}
	return out
}

// Close kills every server (SIGKILL to each process group), stops the proxies and removes the run
// directory. It is idempotent and safe after a failed start.
func (c *local) Close() error {
	c.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, n := range c.byName {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n.kill(true)
			}()
		}
		wg.Wait()
		c.px.stopAll()
		c.sp.stop()
		c.closeErr = removeAll(c.dir)
	})
	return c.closeErr
}

// report writes to Spec.Log.
func (c *local) report(s string) {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	_, _ = io.WriteString(c.spec.Log, s)
}

// removeAll retries briefly: a just-killed server's files may still be being closed.
func removeAll(dir string) error {
	var err error
	for i := 0; i < 5; i++ {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove run dir: %w", err)
}
