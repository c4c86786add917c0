package faults

import (
	"context"
	"sort"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
)

// Env is what faults act on: the cluster and the harness's clients.
type Env interface {
	Cluster() cluster.Cluster
	// Clients is the number of clients (numbered from 1).
	Clients() int
	// TTL is the run's lock TTL.
	TTL() time.Duration
	// Lease is the lease the lock under test holds, as far as the run knows now: the longest
	// Lease.TTL a client reported so far (a process client's ttl_ms arrives the same way), else
	// the run's TTL. Faults sized in leases (Size) are resolved against it when they fire.
	Lease() time.Duration
	// Renews is the lock's background renewal period (algorithms.Info.Renews; 0 when it renews
	// nothing in the background): a fault that must outlast the lease outlasts a renewal too.
	Renews() time.Duration
	// SetClock offsets client c's clock by offset and makes it run at rate (1 = real speed).
	SetClock(c int, offset time.Duration, rate float64)
}

// Target is one occurrence of a fault: the spec, resolved against the run at the moment it fires.
type Target struct {
	Spec
	// Trigger is the client whose point fired the fault (0 for timed faults).
	Trigger int
	// Clients and Nodes are the resolved selections.
	Clients []int
	Nodes   []string
}

// Heal undoes a fault. It must be safe to call once after Inject succeeded.
type Heal func(ctx context.Context) error

// Kind is one fault kind. Kinds are registered in init, one file each.
type Kind interface {
	// Name is the kind's name in specs and histories.
	Name() string
	// Inject applies one occurrence. It returns how to heal it, or nil for faults that need no
	// healing (a kill) or heal themselves.
	Inject(ctx context.Context, env Env, t Target) (Heal, error)
	// Available returns "" when the kind can act on topology t, else why not (one line, the
	// reason a cell is n/a). It asks the topology's traits, never its name.
	Available(t cluster.Topology) string
}

// Blocker is a Kind that stops the triggering client at its point: the nemesis holds the client
// there for the fault's duration (forever for Forever kinds), then heals.
type Blocker interface {
	Blocks() bool
}

// WithinLease is a Kind whose occurrence at a point must be over before the lease of the holder
// it aims at runs out (a restart that makes the server forget a lock still held): one that took
// the whole lease could not make any grant illegal, and its end line says it was missed
// (history.Event.Missed), so the run is unknown unless unsafe, never safe.
type WithinLease interface {
	WithinLease() bool
}

// Forever is a Blocker that never lets the client go (a crash).
type Forever interface {
	Forever() bool
}

// Armer is a Kind that must prepare the cluster when the run starts, before any client runs (the
// failover fault cuts replication so the lock write lands on the master only).
type Armer interface {
	Arm(ctx context.Context, env Env, s Spec) (Heal, error)
}

// Describer adds a human-readable detail to the history line of a fault occurrence.
type Describer interface {
	Describe(t Target) string
}

// linkFault marks the network faults: they act on the proxies of links, and last until healed.
type linkFault interface{ onLinks() }

// pointOnly marks kinds that only make sense at a named point.
type pointOnly interface{ needsPoint() }

// validator checks kind-specific fields.
type validator interface{ validate(Spec) error }

var kinds = map[string]Kind{}

// Register adds a fault kind; call it from init in the kind's own file. A duplicate name panics (a
// programming error).
func Register(k Kind) {
	if _, dup := kinds[k.Name()]; dup {
		panic("faults: duplicate kind " + k.Name())
	}
	kinds[k.Name()] = k
}

// Unavailable returns "" when fault s can act on topology t, else why not: its kind's reason, or
// that its wire aim cannot reach links lockchaos does not parse, or that its node selector names
// a node the topology does not have. The catalogue, soak, explore, locktest and process clients
// all ask it, so they agree on where a fault applies.
func Unavailable(s Spec, t cluster.Topology) string {
	k, ok := kinds[s.Kind]
	if !ok {
		return "unknown fault kind " + s.Kind
	}
	if why := k.Available(t); why != "" {
		return s.Kind + ": " + why
	}
	if s.Wire != nil {
		if why := t.WireLacks(); why != "" {
			return s.Kind + " at a command on the wire: " + why
		}
	}
	if s.Nodes == "leader" {
		if why := t.Lacks(cluster.TraitLeader); why != "" {
			return s.Kind + " on the leader: " + why
		}
	}
	return ""
}

// everywhere is the Available of a kind that acts on any topology: a client's own steps, its
// clock, or its links (every client link is proxied).
func everywhere(cluster.Topology) string { return "" }

// KindNames lists the fault kinds, sorted.
func KindNames() []string {
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
