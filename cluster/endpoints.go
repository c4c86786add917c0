package cluster

import (
	"context"
	"fmt"

	toxiproxy "github.com/lockchaos/lockchaos/third_party/toxiproxy"
)

// buildEndpoints makes one proxy per client per data node and sentinel when proxies are on. Dial
// maps a node's address as other nodes know it (what Sentinel reports) to the client's way in;
// the direct endpoints have a Dial only when that address differs from the harness's (docker:
// the harness cannot use a container's address on the run network).
func (c *topo) buildEndpoints(ctx context.Context) error {
	all := append(append([]*node{}, c.data...), c.sents...)
	mk := func(cl int) (Endpoints, error) {
		e := Endpoints{SQL: c.sqlLogin(cl)}
		if fill := topologyRegistry[c.spec.Topology].endpoints; fill != nil {
			fill(c, &e)
		}
		route := map[string]string{}
		for _, n := range all {
			addr := n.Addr
			if cl > 0 {
				var err error
				if addr, err = c.addLink(ctx, linkKey{cl, n.Name}, n); err != nil {
					return e, err
				}
			}
			if addr != n.inner {
				route[n.inner] = addr
			}
			if n.Kind == KindSentinel {
				e.SentinelAddrs = append(e.SentinelAddrs, addr)
			} else {
				e.Addrs = append(e.Addrs, addr)
			}
		}
		if cl > 0 || len(route) > 0 {
			e.Dial, e.Routes = dialer(route), route
		}
		return e, nil
	}
	direct, err := mk(0)
	if err != nil {
		return err
	}
	c.eps = []Endpoints{direct}
	for cl := 1; cl <= c.spec.Clients; cl++ {
		e := direct
		e.SQL = c.sqlLogin(cl)
		if c.spec.Proxies {
			if e, err = mk(cl); err != nil {
				return err
			}
		}
		c.eps = append(c.eps, e)
	}
	return nil
}

// addLink starts client k.client's proxy for node n: embedded, or on the node's toxiproxy-server
// for the external backend.
func (c *topo) addLink(ctx context.Context, k linkKey, n *node) (string, error) {
	if c.rp != nil {
		return c.rp.Add(ctx, k.client, n.Name, n.Addr)
	}
	addr, err := c.px.add(k, n.Addr)
	if err == nil && c.spec.Wire {
		err = c.px.addWireTaps(k, n.Kind)
	}
	return addr, err
}

// Topology returns the spec's topology.
func (c *topo) Topology() string { return c.spec.Topology }

// Nodes lists the data nodes, then the sentinels. Addr is where the harness reaches the server
// (docker: the published address on 127.0.0.1).
func (c *topo) Nodes() []Node {
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
func (c *topo) Endpoints(cl int) Endpoints {
	if cl < 1 || cl >= len(c.eps) {
		cl = 0
	}
	e := c.eps[cl]
	e.Addrs = append([]string(nil), e.Addrs...)
	e.SentinelAddrs = append([]string(nil), e.SentinelAddrs...)
	return e
}

// Link returns the proxy between client cl and node.
func (c *topo) Link(cl int, node string) (*toxiproxy.Proxy, error) {
	if !c.spec.Proxies {
		return nil, ErrProxiesOff
	}
	if c.rp != nil {
		return nil, fmt.Errorf("the external backend's proxies are on remote toxiproxy-servers (use FaultLink)")
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

// ReplicationLink returns the proxy the replica reaches the master through, on the node its
// topology names (redis-sentinel, redis-cluster, postgres-standby).
func (c *topo) ReplicationLink() (*toxiproxy.Proxy, error) {
	n, err := c.replicationNode()
	if err != nil {
		return nil, err
	}
	p, _, _ := c.px.get(linkKey{0, n})
	return p, nil
}

func (c *topo) node(name string) (*node, error) {
	n, ok := c.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (have %v)", ErrUnknownNode, name, c.names())
	}
	return n, nil
}

func (c *topo) names() []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.Name)
	}
	return out
}
