package faults

import (
	"context"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// partition cuts clients off from nodes ("partition", "partition-oneway", "partition-reset"): bytes held
// and delivered in order at the heal with connections left open, as TCP does across a real
// partition; one way only; or dropped with the connections reset at the heal. It acts on every
// topology: every client link is proxied.
type partition struct{ oneway, reset bool }

func init() {
	Register(partition{})
	Register(partition{oneway: true})
	Register(partition{reset: true})
}

func (partition) onLinks() {}

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

func (partition) needs(Spec) []cluster.Control { return linkNeed }

func (partition) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnNetwork, false) }
