package cluster

import (
	"context"
	"fmt"
	"time"
)

// topology is a topology that plugs itself in from its own file (etcd.go) instead of a case in
// each of the seed topologies' switches (normalize, checkBinaries, startTopo, Leader). It runs
// on the local backend only (server.argv).
type topology struct {
	// nodes validates Spec.Nodes and returns it with its default filled in.
	nodes func(n int) (int, error)
	// needs lists what this machine must have (the servers' binaries), for Start and doctor.
	needs func() []Requirement
	// start adds and launches the data nodes.
	start func(c *topo, ctx context.Context) error
	// leader names the node that leads now; nil when the topology has none.
	leader func(c *topo, ctx context.Context) (string, error)
	// replication names the node whose replication link (linkKey{0, node}) the failover fault
	// cuts; nil when the topology has none.
	replication func(c *topo, ctx context.Context) (string, error)
	// failover fails the named master over its own way; nil: kill it (redis-sentinel's way,
	// Sentinel promotes by itself).
	failover func(c *topo, ctx context.Context, master string) error
	// killSessions ends client's sessions on the server (SessionKiller); nil when the topology
	// has no sessions to end.
	killSessions func(c *topo, ctx context.Context, client int) (int, error)
	// idleTimeout is true when the servers take Spec.SessionIdleTimeout.
	idleTimeout bool
	// multiHost sets Endpoints.MultiHost: clients connect to whichever data node takes writes.
	multiHost bool
}

var extraTopologies = map[string]topology{}

// registerTopology adds a topology; call it from init.
func registerTopology(name string, t topology) {
	if _, dup := extraTopologies[name]; dup {
		panic("cluster: duplicate topology " + name)
	}
	extraTopologies[name] = t
	Topologies = append(Topologies, name)
}

// normalizeExtra fills and checks the fields of a spec whose topology registered itself.
func normalizeExtra(s Spec) (Spec, error) {
	t, ok := extraTopologies[s.Topology]
	if !ok {
		return s, nil
	}
	if s.Backend != "" && s.Backend != Local && s.Backend != External {
		return s, fmt.Errorf("%w: topology %s runs on the local backend only (use --backend local)", ErrBadSpec, s.Topology)
	}
	n, err := t.nodes(s.Nodes)
	if err != nil {
		return s, fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	s.Nodes = n
	return s, nil
}

// extraRequirements lists what the registered topologies need, for doctor.
func extraRequirements() []Requirement {
	var out []Requirement
	seen := map[string]bool{}
	for _, name := range Topologies {
		if t, ok := extraTopologies[name]; ok {
			for _, r := range t.needs() {
				if !seen[r.Name] { // postgres-pgbouncer needs postgres's binaries too
					seen[r.Name] = true
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// extraBinaries returns an ErrMissingBinary error naming the first missing piece and its fix.
func extraBinaries(topology string) error {
	t, ok := extraTopologies[topology]
	if !ok {
		return nil
	}
	for _, r := range t.needs() {
		if !r.OK {
			return fmt.Errorf("%w: %s (%s)", ErrMissingBinary, r.Detail, r.Fix)
		}
	}
	return nil
}

// startExtra starts a registered topology's nodes.
func (c *topo) startExtra(ctx context.Context) error {
	t, ok := extraTopologies[c.spec.Topology]
	if !ok {
		return fmt.Errorf("%w: no starter for topology %s", ErrBadSpec, c.spec.Topology)
	}
	if c.be.name() != Local {
		return fmt.Errorf("%w: topology %s has no docker images (use --backend local)", ErrBadSpec, c.spec.Topology)
	}
	return t.start(c, ctx)
}

// extraLeader returns the leader of a registered topology; ok is false for the seed topologies.
func (c *topo) extraLeader(ctx context.Context) (leader string, ok bool, err error) {
	t, found := extraTopologies[c.spec.Topology]
	if !found {
		return "", false, nil
	}
	if t.leader == nil {
		return "", true, fmt.Errorf("topology %s has no leader", c.spec.Topology)
	}
	leader, err = t.leader(c, ctx)
	return leader, true, err
}

// Failover fails master over: the topology's own way when it registered one, else a kill for
// good (redis-sentinel: Sentinel then promotes the replica by itself).
func (c *topo) Failover(ctx context.Context, master string) error {
	if t, ok := extraTopologies[c.spec.Topology]; ok && t.failover != nil {
		return t.failover(c, ctx, master)
	}
	return c.Kill(ctx, master)
}

// extraReplication returns the replication link's node of a registered topology; ok is false for
// the seed topologies.
func (c *topo) extraReplication() (node string, ok bool, err error) {
	t, found := extraTopologies[c.spec.Topology]
	if !found {
		return "", false, nil
	}
	if t.replication == nil {
		return "", true, fmt.Errorf("topology %s has no replication link", c.spec.Topology)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	node, err = t.replication(c, ctx)
	return node, true, err
}
