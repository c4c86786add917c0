package faults

import (
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/cluster"
)

// Need is a control of the cluster that a fault may use on a node. Backends that lack some
// controls (external: what the cluster file gives) refuse a fault whose needs they cannot meet
// before the run starts.
type Need struct {
	Node    string
	Control cluster.Control
}

// needer is a Kind that acts on the cluster beyond plain client connections.
type needer interface {
	needs(s Spec) []cluster.Control
}

// needsOner is a needer whose controls are needed on other nodes than the default: the nodes
// its spec names, or every node when a selector resolved at firing time may pick any of them, or
// when the kind acts on a client's every link (clientKind).
type needsOner interface {
	needsOn(s Spec, nodes []string) []string
}

// clock-jump needs nothing: its script runs over a plain client connection, so it applies to
// external Redis nodes too (limited to the run's own keys, see Env's KeyPattern).

var linkNeed = []cluster.Control{cluster.ControlLinks}

// Needs lists the controls fault s may use on the cluster's nodes (by name). A selector that is
// resolved only when the fault fires (master, leader, minority, random, random-majority, all) may
// pick any node, so it needs the control on every node; faults on a client's links need every
// node's link.
func Needs(s Spec, nodes []string) []Need {
	k, ok := kinds[s.Kind].(needer)
	if !ok {
		return nil
	}
	targets := nodes
	_, whole := k.(clientKind) // client faults act on every link of the client
	if on, ok := k.(needsOner); ok {
		targets = on.needsOn(s, nodes)
	} else if named := strings.Split(s.Nodes, ","); !whole && s.Nodes != "" && namedOnly(named, nodes) {
		targets = named
	}
	var out []Need
	for _, n := range targets {
		for _, c := range k.needs(s) {
			out = append(out, Need{Node: strings.TrimSpace(n), Control: c})
		}
	}
	return out
}

func namedOnly(sel, nodes []string) bool {
	for _, n := range sel {
		if !slices.Contains(nodes, strings.TrimSpace(n)) {
			return false
		}
	}
	return true
}
