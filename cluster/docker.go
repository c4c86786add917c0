package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// Default images of the docker backend: the official ones. No registry is reachable on the
// project's own machines, so its tests pass the images `make images` builds offline instead.
const (
	DefaultRedisImage     = "redis:7"
	DefaultZooKeeperImage = "zookeeper:3.8"
)

// docker is the docker backend: every server is a container on a network of its own run, with
// its one port published on 127.0.0.1 only. Client links go through the same embedded proxies as
// the local backend's, in front of the published ports; servers reach each other on the network
// by container name.
type docker struct {
	spec    Spec
	id      string // the run id, in every container's and the network's lockchaos.run label
	pool    *dockertest.Pool
	net     *dockertest.Network
	gateway string // the network's gateway: where containers reach the harness (replication proxy)
	data    []*dnode
	sents   []*dnode
	byName  map[string]*dnode
	px      *proxies
	eps     []Endpoints
	// replMaster names the node the replica replicates from (redis-sentinel).
	replMaster string

	logMu sync.Mutex

	closeOnce sync.Once
	closeErr  error
}

// startDocker is Start for the docker backend.
func startDocker(ctx context.Context, spec Spec) (Cluster, error) {
	if spec.RedisImage == "" {
		spec.RedisImage = DefaultRedisImage
	}
	if spec.ZooKeeperImage == "" {
		spec.ZooKeeperImage = DefaultZooKeeperImage
	}
	pool, err := dockerPool(ctx)
	if err != nil {
		return nil, err
	}
	// A harness killed by SIGKILL could not remove its containers; this is the first chance.
	if n, err := cleanDocker(ctx, pool); err != nil && spec.Log != nil {
		fmt.Fprintf(spec.Log, "lockchaos: removing leftovers of killed runs: %v\n", err)
	} else if n > 0 && spec.Log != nil {
		fmt.Fprintf(spec.Log, "lockchaos: removed %d containers and networks left by killed runs\n", n)
	}
	image := spec.RedisImage
	if spec.Topology == ZooKeeper {
		image = spec.ZooKeeperImage
	}
	if err := checkImage(pool, image); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		c, err := startDockerOnce(ctx, spec, pool)
		if err == nil {
			return c, nil
		}
		// As in the local backend: a host port picked free may be taken before docker binds it.
		if !errors.Is(err, errAddrInUse) || attempt == 3 {
			return nil, fmt.Errorf("start %s cluster on docker: %w", spec.Topology, err)
		}
	}
}

func startDockerOnce(ctx context.Context, spec Spec, pool *dockertest.Pool) (_ *docker, err error) {
	c := &docker{spec: spec, id: newRunID(), pool: pool, byName: map[string]*dnode{}, px: newProxies()}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	c.net, err = pool.CreateNetwork(c.prefix(), func(o *dc.CreateNetworkOptions) {
		o.Driver = "bridge"
		o.Labels = c.labels("")
		o.Context = ctx
	})
	if err != nil {
		return nil, fmt.Errorf("create docker network: %w", err)
	}
	// The create answer holds only the id; the gateway is in the network's inspect.
	if info, err := pool.Client.NetworkInfo(c.net.Network.ID); err == nil {
		c.net.Network = info
	}
	if ipam := c.net.Network.IPAM.Config; len(ipam) > 0 {
		c.gateway = ipam[0].Gateway
	}
	switch spec.Topology {
	case RedisSingle, RedisMulti:
		err = c.startRedisMasters(ctx)
	case RedisSentinel:
		err = c.startSentinelTopology(ctx)
	case ZooKeeper:
		err = c.startZooKeeper(ctx)
	default:
		err = fmt.Errorf("%w: topology %s has no docker images (use --backend local)", ErrBadSpec, spec.Topology)
	}
	if err != nil {
		return nil, err
	}
	if err := c.buildEndpoints(); err != nil {
		return nil, err
	}
	return c, nil
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// prefix names the run's network, and with a node's name its container.
func (c *docker) prefix() string { return "lockchaos-" + c.id }

// RunID returns the run id every container and network of the cluster carries in its
// lockchaos.run label.
func (c *docker) RunID() string { return c.id }

func (c *docker) add(n *dnode) {
	c.byName[n.Name] = n
	if n.Kind == KindSentinel {
		c.sents = append(c.sents, n)
	} else {
		c.data = append(c.data, n)
	}
}

// launchAll starts nodes in parallel, as the local backend does.
func (c *docker) launchAll(ctx context.Context, ns []*dnode) error {
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

// buildEndpoints makes one proxy per client per node in front of its published port when proxies
// are on. Dial always maps a node's address on the run network (what Sentinel reports) to the
// client's way in, since the harness cannot use that address itself.
func (c *docker) buildEndpoints() error {
	all := append(append([]*dnode{}, c.data...), c.sents...)
	mk := func(cl int) (Endpoints, error) {
		e := Endpoints{}
		if c.spec.Topology == RedisSentinel {
			e.MasterName = sentinelMasterName
		}
		route := map[string]string{}
		for _, n := range all {
			addr := n.Addr
			if cl > 0 {
				var err error
				if addr, err = c.px.add(linkKey{cl, n.Name}, n.Addr); err != nil {
					return e, err
				}
			}
			route[n.inner] = addr
			if n.Kind == KindSentinel {
				e.SentinelAddrs = append(e.SentinelAddrs, addr)
			} else {
				e.Addrs = append(e.Addrs, addr)
			}
		}
		e.Dial = dialer(route)
		return e, nil
	}
	direct, err := mk(0)
	if err != nil {
		return err
	}
	c.eps = []Endpoints{direct}
	for cl := 1; cl <= c.spec.Clients; cl++ {
		e := direct
		if c.spec.Proxies {
			if e, err = mk(cl); err != nil {
				return err
			}
		}
		c.eps = append(c.eps, e)
	}
	return nil
}

// Topology returns the spec's topology.
func (c *docker) Topology() string { return c.spec.Topology }

// Nodes lists the data nodes, then the sentinels. Addr is the published address on 127.0.0.1.
func (c *docker) Nodes() []Node {
	out := make([]Node, 0, len(c.data)+len(c.sents))
	for _, n := range c.data {
		out = append(out, n.Node)
	}
	for _, n := range c.sents {
		out = append(out, n.Node)
	}
	return out
}

// Endpoints returns client cl's addresses; cl outside 1..Clients gets the published addresses.
func (c *docker) Endpoints(cl int) Endpoints {
	if cl < 1 || cl >= len(c.eps) {
		cl = 0
	}
	e := c.eps[cl]
	e.Addrs = append([]string(nil), e.Addrs...)
	e.SentinelAddrs = append([]string(nil), e.SentinelAddrs...)
	return e
}

// Link returns the proxy between client cl and node.
func (c *docker) Link(cl int, node string) (*toxiproxy.Proxy, error) {
	if !c.spec.Proxies {
		return nil, ErrProxiesOff
	}
	if _, err := c.node(node); err != nil {
		return nil, err
	}
	p, _, ok := c.px.get(linkKey{cl, node})
	if !ok {
		return nil, fmt.Errorf("no link from client %d to %s (clients are 1..%d)", cl, node, c.spec.Clients)
	}
	return p, nil
}

// ReplicationLink returns the proxy the replica reaches the master through (redis-sentinel).
func (c *docker) ReplicationLink() (*toxiproxy.Proxy, error) {
	if c.spec.Topology != RedisSentinel {
		return nil, fmt.Errorf("topology %s has no replication link (only %s)", c.spec.Topology, RedisSentinel)
	}
	p, _, _ := c.px.get(linkKey{0, c.replMaster})
	return p, nil
}

func (c *docker) node(name string) (*dnode, error) {
	n, ok := c.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (have %v)", ErrUnknownNode, name, c.names())
	}
	return n, nil
}

func (c *docker) names() []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.Name)
	}
	return out
}

// Close removes every container of the run (found by its label, so also one whose start failed
// half way), then the network, then stops the proxies. It is idempotent.
func (c *docker) Close() error {
	c.closeOnce.Do(func() {
		for _, n := range c.byName {
			n.close()
		}
		var errs []error
		if err := removeRun(context.Background(), c.pool, c.id); err != nil {
			errs = append(errs, err)
		}
		c.px.stopAll()
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// report writes to Spec.Log.
func (c *docker) report(s string) {
	if c.spec.Log == nil {
		return
	}
	c.logMu.Lock()
	defer c.logMu.Unlock()
	_, _ = io.WriteString(c.spec.Log, s)
}

// innerAddr is a node's address on the run network.
func innerAddr(container string, port int) string {
	return net.JoinHostPort(container, fmt.Sprint(port))
}
