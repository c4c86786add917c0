package cluster

import (
	"fmt"
	"slices"
	"strings"
)

// Trait is something a topology's servers can show or suffer: a scenario or a fault kind that
// needs it asks the topology's descriptor (Topology.Has), never a list of topology names.
type Trait string

// The traits a topology may have.
const (
	// TraitQuorum: a lock takes a majority of several independent nodes (a client can be cut
	// off from a minority and still hold).
	TraitQuorum Trait = "quorum"
	// TraitLeader: one node leads the others, and the faults' "leader" selector finds it.
	TraitLeader Trait = "leader"
	// TraitSessions: the harness can end a client's sessions on the server (session-kill).
	TraitSessions Trait = "sessions"
	// TraitIdleTimeout: the servers end a session idle too long (Spec.SessionIdleTimeout).
	TraitIdleTimeout Trait = "idle-timeout"
	// TraitPooler: the clients reach the server through a connection pooler.
	TraitPooler Trait = "pooler"
	// TraitReplication: a replication link the failover fault cuts, and a failover.
	TraitReplication Trait = "replication"
	// TraitKeyExpiry: a lock's key expires on the server by a TTL the clock-jump fault can shift
	// (Redis's PEXPIRE); a lease timed by a session or a row's timestamp has none.
	TraitKeyExpiry Trait = "key-expiry"
	// TraitRestart, TraitKill, TraitPause: the server controls the local and docker backends
	// have for the topology's nodes (the external backend's come from its cluster file).
	TraitRestart Trait = "restart"
	TraitKill    Trait = "kill"
	TraitPause   Trait = "pause"
	// TraitSessionLease: a lock's lease is its client's session with the servers, which they end
	// after the session timeout (ZooKeeper's ephemeral nodes): faults are sized against the
	// session, not a TTL.
	TraitSessionLease Trait = "session-lease"
	// TraitIndependentNodes: the quorum's nodes share nothing (Redlock's masters): a restarted or
	// clock-jumped node forgets or expires its copy alone, and only a bare majority makes that
	// matter.
	TraitIndependentNodes Trait = "independent-nodes"
)

// traitWants says, for a topology without the trait, what it would take: the n/a line's end.
var traitWants = map[Trait]string{
	TraitQuorum:           "quorum of several independent nodes",
	TraitLeader:           "leader among their nodes",
	TraitSessions:         "sessions the harness can end",
	TraitIdleTimeout:      "idle-session timeout",
	TraitPooler:           "connection pooler between the clients and the server",
	TraitReplication:      "replica to fail over to",
	TraitKeyExpiry:        "key whose expiry follows a server clock",
	TraitRestart:          "restart lockchaos can do",
	TraitKill:             "kill lockchaos can do",
	TraitPause:            "pause lockchaos can do",
	TraitSessionLease:     "lease that is the client's session",
	TraitIndependentNodes: "quorum of nodes that share nothing",
}

// Topology is what a topology is, as every other package asks it: the catalogue, soak, explore,
// locktest, process clients and `lockchaos list` read it here rather than keep a list of names.
// It is made from the registration in the topology's own file (registerTopology).
type Topology struct {
	// Name is the topology's name in specs, flags and histories.
	Name string `json:"name"`
	// Family names the scenario variants a lock on the topology runs by default ("redis",
	// "redlock", "zookeeper", "etcd", "sql", "redis-cluster"): the variants act on what the
	// servers speak and hold.
	Family string `json:"family"`
	// Kind is the kind of server the clients' lock traffic reaches (redis, zookeeper, etcd,
	// postgres, pgbouncer, mariadb).
	Kind Kind `json:"kind"`
	// Wire is the protocol lockchaos parses on the clients' links (protoRESP, protoZooKeeper),
	// "" when it parses none: faults aimed at a command on the wire cannot reach such a link.
	Wire string `json:"wire,omitempty"`
	// Traits are what the topology's servers can show or suffer.
	Traits []Trait `json:"traits"`
	// Docker says the docker backend runs the topology (its kinds have containers).
	Docker bool `json:"docker"`
}

// Has reports whether the topology has trait tr.
func (t Topology) Has(tr Trait) bool { return slices.Contains(t.Traits, tr) }

// Lacks returns "" when the topology has every trait of trs, else the line a cell that needs them
// is n/a with: "its servers (mariadb) have no connection pooler between the clients and the
// server".
func (t Topology) Lacks(trs ...Trait) string {
	var missing []string
	for _, tr := range trs {
		if !t.Has(tr) {
			missing = append(missing, traitWants[tr])
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("its servers (%s) have no %s", t.Name, strings.Join(missing, ", nor "))
}

// WireLacks returns "" when lockchaos parses the protocol of the topology's client links, else
// why a fault aimed at a command on the wire cannot reach them.
func (t Topology) WireLacks() string {
	if t.Wire != "" {
		return ""
	}
	return fmt.Sprintf("its clients' links (%s) are not parsed on the wire: %s", t.Kind, kinds[t.Kind].wireSupport)
}

// LookupTopology returns the descriptor of the named topology.
func LookupTopology(name string) (Topology, error) {
	t, ok := topologyRegistry[name]
	if !ok {
		return Topology{}, fmt.Errorf("%w: unknown topology %q (use one of %s)", ErrBadSpec, name, strings.Join(Topologies, ", "))
	}
	return t.describe(name), nil
}

// AllTopologies returns every topology's descriptor, in the order of Topologies.
func AllTopologies() []Topology {
	out := make([]Topology, 0, len(Topologies))
	for _, name := range Topologies {
		out = append(out, topologyRegistry[name].describe(name))
	}
	return out
}

// describe makes the exported descriptor of the registration t: what it declares, and the
// traits that follow from the abilities it registered.
func (t topology) describe(name string) Topology {
	d := Topology{Name: name, Family: t.family, Kind: t.clients, Wire: kinds[t.clients].wire, Docker: t.containers != nil,
		Traits: slices.Clone(t.traits)}
	d.Traits = append(d.Traits, TraitRestart, TraitKill, TraitPause)
	add := func(tr Trait, ok bool) {
		if ok {
			d.Traits = append(d.Traits, tr)
		}
	}
	add(TraitLeader, t.leader != nil)
	add(TraitSessions, t.killSessions != nil)
	add(TraitIdleTimeout, t.idleTimeout)
	add(TraitReplication, t.replication != nil)
	slices.Sort(d.Traits)
	return d
}
