package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	toxiproxy "github.com/lockchaos/lockchaos/third_party/toxiproxy"
)

// Link is one proxied hop that network faults act on, whichever toxiproxy holds it: an embedded
// proxy in the harness (local, docker) or a proxy on a remote toxiproxy-server (external).
type Link interface {
	// Name is the proxy's name.
	Name() string
	// AddToxic adds a toxiproxy toxic of type typ ("latency", "timeout", ...) on stream
	// ("upstream" or "downstream") with its attributes as toxiproxy's JSON names them.
	AddToxic(ctx context.Context, name, typ, stream string, attrs map[string]any) error
	// RemoveToxic removes a toxic added by AddToxic.
	RemoveToxic(ctx context.Context, name string) error
	// SetEnabled(false) closes the proxy (connections are refused, open ones cut); true opens
	// it again on the same address.
	SetEnabled(ctx context.Context, on bool) error
}

// embeddedLink is a Link over a proxy in the harness process.
type embeddedLink struct{ p *toxiproxy.Proxy }

func (l embeddedLink) Name() string { return l.p.Name }

func (l embeddedLink) AddToxic(_ context.Context, name, typ, stream string, attrs map[string]any) error {
	body, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1, "attributes": attrs})
	if err != nil {
		return err
	}
	_, err = l.p.Toxics.AddToxicJson(strings.NewReader(string(body)))
	return err
}

func (l embeddedLink) RemoveToxic(ctx context.Context, name string) error {
	return l.p.Toxics.RemoveToxic(ctx, name)
}

func (l embeddedLink) SetEnabled(_ context.Context, on bool) error {
	if !on {
		l.p.Stop()
		return nil
	}
	if err := l.p.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		return err
	}
	return nil
}

// FaultLink returns the link between client cl and node for a network fault, on every backend.
func (c *topo) FaultLink(cl int, node string) (Link, error) {
	if c.rp != nil {
		if _, err := c.node(node); err != nil {
			return nil, err
		}
		return c.rp.Link(cl, node)
	}
	p, err := c.Link(cl, node)
	if err != nil {
		return nil, err
	}
	return embeddedLink{p}, nil
}

// FaultReplicationLink returns the replication link for a network fault (redis-sentinel, not on
// the external backend, whose replication lockchaos does not carry).
func (c *topo) FaultReplicationLink() (Link, error) {
	if c.rp != nil {
		return nil, fmt.Errorf("%w: the external backend has no replication link (failover needs the local or docker backend)", ErrBadSpec)
	}
	p, err := c.ReplicationLink()
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fmt.Errorf("no replication link")
	}
	return embeddedLink{p}, nil
}
