package cluster

import (
	"context"
	"fmt"
	"net"
	"sync"

	toxiproxy "github.com/lockchaos/lockchaos/third_party/toxiproxy"
	"github.com/rs/zerolog"
)

// proxies holds the embedded toxiproxy proxies of one cluster. They run in the harness process,
// so a fault is a function call, not an HTTP request, and they die with the harness.
type proxies struct {
	server *toxiproxy.ApiServer

	mu     sync.Mutex
	links  map[linkKey]*toxiproxy.Proxy
	listen map[linkKey]string // the proxy's address, fixed at first start
	all    []*toxiproxy.Proxy
	taps   map[linkKey]*WireTap // the parsed links (Spec.Wire)
	tapIDs []int64
}

// linkKey names a link: client 0 is the replication link of redis-sentinel.
type linkKey struct {
	client int
	node   string
}

func newProxies() *proxies {
	return &proxies{
		server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		links:  map[linkKey]*toxiproxy.Proxy{},
		listen: map[linkKey]string{},
	}
}

// add starts a proxy for k on a kernel-chosen port of 127.0.0.1. Start rewrites proxy.Listen to
// the bound address, so a proxy that is stopped (refuse fault) and started again comes back on
// the same port and clients' addresses stay valid.
func (ps *proxies) add(k linkKey, upstream string) (string, error) {
	return ps.addOn(k, "127.0.0.1:0", upstream)
}

// addOn is add listening on listen (the docker backend's replication link listens on the run
// network's gateway, where the replica container can reach it).
func (ps *proxies) addOn(k linkKey, listen, upstream string) (string, error) {
	name := fmt.Sprintf("c%d-%s", k.client, k.node)
	if k.client == 0 {
		name = "replication-" + k.node
	}
	p := toxiproxy.NewProxy(ps.server, name, listen, upstream)
	if err := p.Start(); err != nil {
		return "", fmt.Errorf("start proxy %s: %w", name, err)
	}
	addr := p.Listen
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.links[k] = p
	ps.listen[k] = addr
	ps.all = append(ps.all, p)
	return addr, nil
}

func (ps *proxies) get(k linkKey) (*toxiproxy.Proxy, string, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.links[k]
	return p, ps.listen[k], ok
}

// stopAll stops every proxy and closes its connections.
func (ps *proxies) stopAll() {
	ps.mu.Lock()
	all, ids := ps.all, ps.tapIDs
	ps.all, ps.tapIDs = nil, nil
	ps.mu.Unlock()
	for _, p := range all {
		p.Stop()
	}
	for _, id := range ids {
		unregisterTap(id)
	}
}

// dialer returns a Dial func that sends a connection for a node's real address through this
// client's proxy for that node, so a client that learns real addresses (go-redis FailoverClient
// asking Sentinel) still goes through the faultable hop. Other addresses (already proxied ones,
// like the sentinel addresses in Endpoints) are dialled as given.
func dialer(route map[string]string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p, ok := route[addr]; ok {
			addr = p
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}
