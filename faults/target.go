package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/cluster"
)

// clientKind marks kinds aimed at clients; their Clients selector defaults to "trigger".
type clientKind interface{ targetsClients() }

// resolve turns the spec's selectors into concrete clients and nodes at the moment of firing.
func resolve(ctx context.Context, env Env, s Spec, trigger int, pick uint64) (Target, error) {
	t := Target{Spec: s, Trigger: trigger}
	sel := s.Clients
	if sel == "" {
		if _, ok := kinds[s.Kind].(clientKind); ok {
			sel = "trigger"
		}
	}
	var err error
	if sel != "" {
		if t.Clients, err = selectClients(sel, env.Clients(), trigger, pick); err != nil {
			return t, err
		}
	}
	if t.Nodes, err = selectNodes(ctx, env.Cluster(), s.Nodes, pick); err != nil {
		return t, err
	}
	return t, nil
}

func selectClients(sel string, n, trigger int, pick uint64) ([]int, error) {
	all := make([]int, n)
	for i := range all {
		all[i] = i + 1
	}
	switch sel {
	case "all":
		return all, nil
	case "trigger", "others":
		if trigger == 0 {
			return nil, fmt.Errorf("clients %q needs an event-triggered fault (set point)", sel)
		}
		if sel == "trigger" {
			return []int{trigger}, nil
		}
		others := make([]int, 0, n-1)
		for _, c := range all {
			if c != trigger {
				others = append(others, c)
			}
		}
		return others, nil
	case "random":
		return []int{int(pick%uint64(n)) + 1}, nil
	}
	return clientList(sel, n)
}

// checkClients reports what is wrong with a clients selector; n > 0 bounds the client numbers.
func checkClients(sel string, n int) error {
	switch sel {
	case "", "all", "trigger", "others", "random":
		return nil
	}
	_, err := clientList(sel, n)
	return err
}

// clientList reads a list "1,3" or range "2-5" of client numbers; n > 0 bounds them.
func clientList(sel string, n int) ([]int, error) {
	var out []int
	for _, part := range strings.Split(sel, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 1 || (n > 0 && b > n) || a > b {
			bound := "from 1"
			if n > 0 {
				bound = fmt.Sprintf("1..%d", n)
			}
			return nil, fmt.Errorf("clients %q: want trigger, others, all, random, or numbers %s like 1,3 or 2-5", sel, bound)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// dataNodes lists the nodes that hold data (not sentinels).
func dataNodes(c cluster.Cluster) []string {
	var out []string
	for _, n := range c.Nodes() {
		if n.Kind != cluster.KindSentinel {
			out = append(out, n.Name)
		}
	}
	return out
}

func selectNodes(ctx context.Context, c cluster.Cluster, sel string, pick uint64) ([]string, error) {
	data := dataNodes(c)
	switch sel {
	case "":
		return nil, nil
	case "all":
		return data, nil
	case "replication":
		return []string{"replication"}, nil
	case "master":
		m, err := c.Master(ctx)
		if err != nil {
			return nil, fmt.Errorf("find master: %w", err)
		}
		return []string{m}, nil
	case "leader":
		l, err := c.Leader(ctx)
		if err != nil {
			return nil, fmt.Errorf("find leader: %w", err)
		}
		return []string{l}, nil
	case "minority":
		return data[:(len(data)-1)/2], nil
	case "random":
		return []string{data[pick%uint64(len(data))]}, nil
	case "random-majority":
		rest := data[(len(data)-1)/2:]
		return []string{rest[pick%uint64(len(rest))]}, nil
	}
	known := map[string]bool{}
	for _, n := range c.Nodes() {
		known[n.Name] = true
	}
	var out []string
	for _, name := range strings.Split(sel, ",") {
		name = strings.TrimSpace(name)
		if !known[name] {
			return nil, fmt.Errorf("nodes %q: no node %q in this cluster (nodes: %s; or all, master, leader, minority, random, random-majority, replication)", sel, name, strings.Join(data, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}
