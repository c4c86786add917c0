package external

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	toxiclient "github.com/lockchaos/lockchaos/third_party/toxiproxy/client"

	"github.com/lockchaos/lockchaos/cluster"
)

// The external backend's proxies live on the toxiproxy-servers the cluster file names, one per
// client per node, as the embedded ones do:
//
//	client c ──▶ toxiproxy-server next to node (proxy lockchaos-<run>-c<c>-<node>) ──▶ node
//
// Every proxy's name starts with cluster.ProxyPrefix and the run id, which holds this host's hash
// and this process's pid: a later run on the same host removes the proxies of runs whose process
// is gone (killed with SIGKILL, so its Close never ran), and never those of a live run.

// apiTimeout bounds one call to a toxiproxy-server's API (the client library has no timeout).
const apiTimeout = 10 * time.Second

// api calls f, bounded by apiTimeout and ctx.
func api[T any](ctx context.Context, f func() (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := f()
		ch <- res{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("toxiproxy API: %w", ctx.Err())
	}
}

// apis lists the distinct toxiproxy APIs of a file.
func apis(f *cluster.ExternalFile) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range f.Nodes {
		if n.Toxiproxy != "" && !seen[n.Toxiproxy] {
			seen[n.Toxiproxy] = true
			out = append(out, n.Toxiproxy)
		}
	}
	return out
}

// removeProxies deletes the proxies whose name match selects (with their toxics) and counts them.
func removeProxies(ctx context.Context, c *toxiclient.Client, match func(name string) bool) (int, error) {
	ps, err := api(ctx, c.Proxies)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for name, p := range ps {
		if !match(name) {
			continue
		}
		if _, err := api(ctx, func() (struct{}, error) { return struct{}{}, p.Delete() }); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", name, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// remoteProxies are one run's proxies on the file's toxiproxy-servers.
type remoteProxies struct {
	file   *cluster.ExternalFile
	prefix string // cluster.ProxyPrefix + run id + "-"

	mu    sync.Mutex
	links map[linkKey]*remoteLink
}

// linkKey names one client's link to one node.
type linkKey struct {
	client int
	node   string
}

func newRemoteProxies(f *cluster.ExternalFile, runID string) *remoteProxies {
	return &remoteProxies{file: f, prefix: cluster.ProxyPrefix + runID + "-", links: map[linkKey]*remoteLink{}}
}

// Add creates client's proxy for node (the server at to) on the node's toxiproxy-server,
// listening on the server's host on a port it picks, and returns the address clients dial. A node
// without a toxiproxy API is reached directly (faults needing its links were refused before the
// start).
func (rp *remoteProxies) Add(ctx context.Context, client int, node, to string) (string, error) {
	k := linkKey{client, node}
	fn, _ := rp.file.Node(node)
	if fn.Toxiproxy == "" {
		return to, nil
	}
	host, _, _ := net.SplitHostPort(fn.Toxiproxy)
	name := fmt.Sprintf("%sc%d-%s", rp.prefix, k.client, node)
	c := toxiclient.NewClient(fn.Toxiproxy)
	p, err := api(ctx, func() (*toxiclient.Proxy, error) {
		return c.CreateProxy(name, net.JoinHostPort(host, "0"), to)
	})
	if err != nil {
		return "", fmt.Errorf("create proxy %s on toxiproxy %s: %w", name, fn.Toxiproxy, err)
	}
	addr := p.Listen
	// A server told to listen on a wildcard reports it; clients reach it by the API's host.
	if h, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
			addr = net.JoinHostPort(host, port)
		}
	}
	rp.mu.Lock()
	rp.links[k] = &remoteLink{p: p, api: fn.Toxiproxy}
	rp.mu.Unlock()
	return addr, nil
}

// Link returns client's link to node.
func (rp *remoteProxies) Link(client int, node string) (cluster.Link, error) {
	k := linkKey{client, node}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	l, ok := rp.links[k]
	if !ok {
		if fn, found := rp.file.Node(k.node); found && fn.Toxiproxy == "" {
			return nil, fmt.Errorf("%w: %v", cluster.ErrBadSpec, rp.file.Missing(k.node, cluster.ControlLinks))
		}
		return nil, fmt.Errorf("no link from client %d to %s (proxies are on only for runs with faults)", k.client, k.node)
	}
	return l, nil
}

// RemoveAll deletes every proxy of the run from every toxiproxy-server of the file: those it
// knows, and any whose create answer was lost on the way.
func (rp *remoteProxies) RemoveAll() error {
	ctx := context.Background()
	var errs []error
	for _, a := range apis(rp.file) {
		if _, err := removeProxies(ctx, toxiclient.NewClient(a), func(name string) bool {
			return strings.HasPrefix(name, rp.prefix)
		}); err != nil {
			errs = append(errs, fmt.Errorf("remove this run's proxies from toxiproxy %s: %w", a, err))
		}
	}
	return errors.Join(errs...)
}

// remoteHold is the hold (cluster.HoldToxic) on a remote toxiproxy-server: latency longer than
// any run.
var remoteHold = map[string]any{"latency": int64(24 * 60 * 60 * 1000), "jitter": 0}

// remoteLink is a Link over a proxy on a toxiproxy-server.
type remoteLink struct {
	api string
	mu  sync.Mutex // the client's Proxy is a mutable struct (Enabled, Save)
	p   *toxiclient.Proxy
}

func (l *remoteLink) Name() string { return l.p.Name }

func (l *remoteLink) AddToxic(ctx context.Context, name, typ, stream string, attrs map[string]any) error {
	if typ == cluster.HoldToxic { // toxiproxy-server knows only its own toxics: see HoldToxic
		typ, attrs = "latency", remoteHold
	}
	_, err := api(ctx, func() (*toxiclient.Toxic, error) {
		return l.p.AddToxic(name, typ, stream, 1, toxiclient.Attributes(attrs))
	})
	return err
}

func (l *remoteLink) RemoveToxic(ctx context.Context, name string) error {
	_, err := api(ctx, func() (struct{}, error) { return struct{}{}, l.p.RemoveToxic(name) })
	return err
}

func (l *remoteLink) SetEnabled(ctx context.Context, on bool) error {
	_, err := api(ctx, func() (struct{}, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if on {
			return struct{}{}, l.p.Enable()
		}
		return struct{}{}, l.p.Disable()
	})
	return err
}
