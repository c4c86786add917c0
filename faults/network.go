package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/cluster"
)

// The network faults act on the toxiproxy proxies in front of every link (cluster.Link: embedded
// in the harness, or on a toxiproxy-server next to an external node):
//
//	client c ──▶ proxy(c, node) ──▶ node        replica ──▶ proxy(replication) ──▶ master
//
// latency adds delay; partition holds the link's bytes and delivers them in order when it heals,
// connections left open, as TCP does across a real partition (cluster.HoldToxic); partition-reset
// drops the bytes and resets the connections at the heal (toxiproxy's timeout toxic with timeout 0:
// a firewall's RST, a NAT table flushed); refuse disables the proxy (connection refused: fail fast).

type latency struct{}
type partition struct{ oneway, reset bool }
type refuse struct{}

func init() {
	Register(latency{})
	Register(partition{})
	Register(partition{oneway: true})
	Register(partition{reset: true})
	Register(refuse{})
}

func (latency) Available(t cluster.Topology) string { return everywhere(t) }
func (latency) Name() string                        { return "latency" }

func (latency) onLinks()   {}
func (partition) onLinks() {}
func (refuse) onLinks()    {}

func (latency) Describe(t Target) string {
	return fmt.Sprintf("latency %s ± %s", t.Amount, t.Jitter)
}

func (latency) validate(s Spec) error {
	if !s.Amount.positive() {
		return errors.New("fault latency: amount must be > 0 (e.g. amount: 300ms)")
	}
	return nil
}

func (latency) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	attrs := map[string]any{"latency": t.Amount.D().Milliseconds(), "jitter": t.Jitter.D().Milliseconds()}
	stream := t.Stream
	if stream == "" {
		stream = "downstream" // one delay per request/response round trip
	}
	return addToxic(ctx, env, t, "latency", attrs, stream)
}

func (partition) Available(t cluster.Topology) string { return everywhere(t) }

func (p partition) Name() string {
	switch {
	case p.oneway:
		return "partition-oneway"
	case p.reset:
		return "partition-reset"
	}
	return "partition"
}

func (p partition) Describe(t Target) string {
	if p.reset {
		return "bytes dropped, connections reset at the heal"
	}
	return "bytes held, delivered in order at the heal"
}

func (p partition) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	stream := t.Stream
	if p.oneway && (stream == "" || stream == "both") {
		stream = "upstream"
	}
	if p.reset {
		return addToxic(ctx, env, t, "timeout", blackHole, stream)
	}
	return addToxic(ctx, env, t, cluster.HoldToxic, nil, stream)
}

func (refuse) Available(t cluster.Topology) string { return everywhere(t) }
func (refuse) Name() string                        { return "refuse" }

func (refuse) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	links, err := links(env, t)
	if err != nil {
		return nil, err
	}
	heal := func(ctx context.Context) error {
		var errs []error
		for _, l := range links {
			if err := l.SetEnabled(ctx, true); err != nil {
				errs = append(errs, fmt.Errorf("re-enable %s: %w", l.Name(), err))
			}
		}
		return errors.Join(errs...)
	}
	for _, l := range links {
		if err := l.SetEnabled(ctx, false); err != nil {
			_ = heal(ctx)
			return nil, fmt.Errorf("disable %s: %w", l.Name(), err)
		}
	}
	return heal, nil
}

// blackHole is the timeout toxic's attributes for partition-reset and the silence of a stopped or
// crashed client: bytes vanish, and connections are closed when it is removed.
var blackHole = map[string]any{"timeout": 0}

// links resolves the proxies a network fault acts on: every (client, node) pair of the target, or
// the replication link. With no clients selected, all clients' links to the nodes.
func links(env Env, t Target) ([]cluster.Link, error) {
	c := env.Cluster()
	if len(t.Nodes) == 1 && t.Nodes[0] == "replication" {
		l, err := c.FaultReplicationLink()
		if err != nil {
			return nil, err
		}
		return []cluster.Link{l}, nil
	}
	nodes := t.Nodes
	if len(nodes) == 0 {
		for _, n := range c.Nodes() {
			nodes = append(nodes, n.Name) // a client's every link, sentinels included
		}
	}
	clients := t.Clients
	if len(clients) == 0 {
		for i := 1; i <= env.Clients(); i++ {
			clients = append(clients, i)
		}
	}
	var out []cluster.Link
	for _, cl := range clients {
		for _, n := range nodes {
			l, err := c.FaultLink(cl, n)
			if err != nil {
				return nil, fmt.Errorf("link client-%d → %s: %w", cl, n, err)
			}
			out = append(out, l)
		}
	}
	return out, nil
}

// addToxic adds one toxic to every link of the target, on the chosen streams, and returns the heal
// that removes them. If adding fails half-way, what was added is removed again.
func addToxic(ctx context.Context, env Env, t Target, typ string, attrs map[string]any, stream string) (Heal, error) {
	ls, err := links(env, t)
	if err != nil {
		return nil, err
	}
	streams := []string{"upstream", "downstream"}
	if stream != "" && stream != "both" {
		streams = []string{stream}
	}
	type added struct {
		l    cluster.Link
		name string
	}
	var done []added
	heal := func(ctx context.Context) error {
		var errs []error
		for _, a := range done {
			if err := a.l.RemoveToxic(ctx, a.name); err != nil {
				errs = append(errs, fmt.Errorf("remove %s from %s: %w", a.name, a.l.Name(), err))
			}
		}
		return errors.Join(errs...)
	}
	seq := toxicSeq.Add(1)
	for _, l := range ls {
		for _, s := range streams {
			name := fmt.Sprintf("lockchaos-%s-%d-%s", typ, seq, s)
			if err := l.AddToxic(ctx, name, typ, s, attrs); err != nil {
				_ = heal(ctx)
				return nil, fmt.Errorf("add %s toxic to %s: %w", typ, l.Name(), err)
			}
			done = append(done, added{l, name})
		}
	}
	return heal, nil
}
