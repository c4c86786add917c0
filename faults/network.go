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
