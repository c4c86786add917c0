package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// topology is everything the cluster layer decides by topology, registered from the topology's
// own file (redis.go, sentinel.go, zookeeper.go, etcd.go, ...) with registerTopology: adding a
// topology is adding a file, with no case to add in a switch elsewhere.
type topology struct {
	// family names the scenario variants a lock on the topology runs by default (Topology.Family).
	family string
	// clients is the kind of server the clients' lock traffic reaches (Topology.Kind).
	clients Kind
	// traits are what the topology declares it can show beyond what its functions below imply
	// (Topology.Traits: a leader, sessions, an idle timeout, replication follow from them).
	traits []Trait
	// nodes validates Spec.Nodes and returns it with its default filled in.
	nodes func(n int) (int, error)
	// needs lists what this machine must have (the servers' binaries), checked by every local
	// Start.
	needs func() []Requirement
	// doctor lists what lockchaos doctor reports for the topology, with versions; nil: needs.
	// Redis and ZooKeeper keep it apart from needs so that a Start does not pay for `java
	// -version`, and so that doctor may report what a start can do without (slf4j-simple).
	doctor func() []Requirement
	// containers lists the kinds of server the topology runs, when the docker backend runs it
	// (each registered with registerKind, its container there); nil: it runs on the local
	// backend only (server.argv).
	containers []Kind
	// start adds and launches the data nodes (local and docker backends; the external backend's
	// nodes come from its cluster file).
	start func(c *topo, ctx context.Context) error
	// master names the node that takes writes now (Master, and the faults' "master" selector);
	// nil: the leader.
	master func(c *topo, ctx context.Context) (string, error)
	// leader names the node that leads now (Leader); nil when the topology has none.
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
	// sql is the kind of SQL server the clients log in to (KindPostgres, KindMariaDB: their
	// Endpoints.SQL); "" when they do not.
	sql Kind
	// idleTimeout is true when the servers take Spec.SessionIdleTimeout.
	idleTimeout bool
	// endpoints fills what a client needs beyond the nodes' addresses (redis-sentinel: the
	// master's name; redis-cluster: Endpoints.Cluster; postgres-standby: Endpoints.MultiHost);
	// nil when it needs nothing more.
	endpoints func(c *topo, e *Endpoints)
}

// topologyRegistry holds every topology by name; Topologies lists the names in order.
var topologyRegistry = map[string]topology{}

// registerTopology adds a topology; call it from init in the topology's file. A topology not
// listed yet in Topologies is appended to it, so the others come in the order their files' init
// runs (by file name).
func registerTopology(name string, t topology) {
	if _, dup := topologyRegistry[name]; dup {
		panic("cluster: duplicate topology " + name)
	}
	if t.family == "" || t.clients == "" {
		panic("cluster: topology " + name + " says not what family its locks are of or what kind of server its clients reach")
	}
	topologyRegistry[name] = t
	if !slices.Contains(Topologies, name) {
		Topologies = append(Topologies, name)
	}
}

// runsOn refuses, in one line, a backend that cannot run topology name (t): the docker backend
// a topology without containers.
func (t topology) runsOn(name, backend string) error {
	if t.containers == nil && backend == Docker {
		return fmt.Errorf("%w: topology %s runs on the local backend only (use --backend local)", ErrBadSpec, name)
	}
	return nil
}

// OnDocker says whether the docker backend runs the topology (its servers' kinds have containers).
func OnDocker(topology string) bool { return topologyRegistry[topology].containers != nil }

// normalizeTopology fills and checks the fields of a spec that its topology decides: the backends
// it runs on and its number of nodes.
func normalizeTopology(s Spec) (Spec, error) {
	t := topologyRegistry[s.Topology]
	if err := t.runsOn(s.Topology, s.Backend); err != nil {
		return s, err
	}
	n, err := t.nodes(s.Nodes)
	if err != nil {
		return s, fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	s.Nodes = n
	return s, nil
}

// allRequirements lists what every topology needs, for doctor, each thing once, in the order of
// Topologies.
func allRequirements() []Requirement {
	var out []Requirement
	seen := map[string]bool{}
	for _, name := range Topologies {
		t := topologyRegistry[name]
		list := t.doctor
		if list == nil {
			list = t.needs
		}
		for _, r := range list() {
			if !seen[r.Name] { // redis-multi needs redis-single's redis-server, postgres-pgbouncer postgres's binaries
				seen[r.Name] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// checkBinaries returns an ErrMissingBinary error naming the first missing piece and its fix.
func checkBinaries(topology string) error {
	t, ok := topologyRegistry[topology]
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

// startServers starts the topology's servers on the local or docker backend.
func (c *topo) startServers(ctx context.Context) error {
	t, ok := topologyRegistry[c.spec.Topology]
	if !ok {
		return fmt.Errorf("%w: no starter for topology %s", ErrBadSpec, c.spec.Topology)
	}
	if c.be.name() != Local && t.containers == nil {
		return fmt.Errorf("%w: topology %s has no docker images (use --backend local)", ErrBadSpec, c.spec.Topology)
	}
	return t.start(c, ctx)
}

// Master returns the node that takes writes now, as its topology finds it.
func (c *topo) Master(ctx context.Context) (string, error) {
	t := topologyRegistry[c.spec.Topology]
	switch {
	case t.master != nil:
		return t.master(c, ctx)
	case t.leader != nil:
		return t.leader(c, ctx)
	}
	return "", fmt.Errorf("topology %s has no master", c.spec.Topology)
}

// Leader returns the node that leads now (the ZooKeeper member whose srvr reports Mode: leader
// or standalone, the etcd leader, the one SQL server, ...), as its topology finds it.
func (c *topo) Leader(ctx context.Context) (string, error) {
	t := topologyRegistry[c.spec.Topology]
	if t.leader == nil {
		return "", fmt.Errorf("topology %s has no leader", c.spec.Topology)
	}
	return t.leader(c, ctx)
}

// Failover fails master over: the topology's own way when it registered one, else a kill for
// good (redis-sentinel: Sentinel then promotes the replica by itself).
func (c *topo) Failover(ctx context.Context, master string) error {
	if t := topologyRegistry[c.spec.Topology]; t.failover != nil {
		return t.failover(c, ctx, master)
	}
	return c.Kill(ctx, master)
}

// replicationNode returns the node whose replication link the failover fault cuts.
func (c *topo) replicationNode() (string, error) {
	t := topologyRegistry[c.spec.Topology]
	if t.replication == nil {
		return "", fmt.Errorf("topology %s has no replication link", c.spec.Topology)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return t.replication(c, ctx)
}
