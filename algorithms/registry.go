package algorithms

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"
)

// Info describes a registered algorithm.
type Info struct {
	// Name is the CLI name, e.g. "token".
	Name string
	// Summary is one line on what the algorithm does.
	Summary string
	// Source names where it comes from (a seed article, a library).
	Source string
	// Topologies the algorithm runs on; the first is its default.
	Topologies []string
	// Points are the named points the algorithm calls, in the order it calls them.
	Points []string
	// Fenced is true when Lease.Fence is a real fencing token.
	Fenced bool
	// FenceUnchecked, on a Fenced algorithm, tells the harness to run its resource without the
	// fence check (the fence-unchecked mutant: the tokens are real, nobody looks at them).
	FenceUnchecked bool
	// Mutant, when set, marks a mutant (docs/design.md#mutants): the name of the real algorithm it breaks.
	// Mutants are hidden from Names and All (so from `list` and the default matrix), listed by
	// Mutants, and found by Lookup.
	Mutant string
	// Removed says, for a mutant, the one mechanism removed from the real algorithm.
	Removed string
	// Family, when set, names the scenario variants the lock runs instead of its first
	// topology's (cluster.Topology.Family): a process client's manifest may say so.
	Family string
	// ReferenceOn lists the topologies on which this is the reference lock: the one whose
	// expectations a user's lock there is held to (locktest.WithExpectationsOf's default) and
	// whose n/a reasons it shares. Each topology has one.
	ReferenceOn []string
	// Process is true for a process client (algorithms/process): its clock is its process's.
	Process bool
	// Unreached maps the fault kinds that cannot reach this lock to why ("clock-skew": client-go
	// keeps its clock where the harness cannot move it). A cell with such a fault is n/a with the
	// reason, and `lockchaos list` says so: the lock is the one owner of what cannot touch it.
	Unreached map[string]string
	// Renews is the period at which the lock renews its lease in the background (a watchdog or
	// heartbeat thread, a ZooKeeper client's session pings), 0 when it renews nothing: a fault
	// that must outlast the lease must outlast a renewal too (a frozen heartbeat, a partition
	// longer than the lease plus this period). A process client's manifest says it (renews).
	// RenewalPeriod gives the period a run uses.
	Renews time.Duration
	// RenewsPerTTL, for a lock that renews at a fraction of its TTL (a watchdog every TTL/3:
	// 1.0/3), is that fraction; Renews, when set, wins.
	RenewsPerTTL float64
	// New builds one client's Locker.
	New func(Config) (Locker, error)
}

// RenewalPeriod is the period at which the lock renews a lease of ttl in the background
// (Renews, else RenewsPerTTL of ttl), 0 when it renews nothing.
func (i Info) RenewalPeriod(ttl time.Duration) time.Duration {
	if i.Renews > 0 {
		return i.Renews
	}
	return time.Duration(i.RenewsPerTTL * float64(ttl))
}

var (
	registryMu sync.RWMutex // locktest registers and unregisters while runs look algorithms up
	registry   = map[string]Info{}
)

// Register adds an algorithm; it panics on a duplicate name (a programming error).
func Register(info Info) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[info.Name]; dup {
		panic("algorithms: duplicate " + info.Name)
	}
	for _, t := range info.ReferenceOn {
		for _, other := range registry {
			if slices.Contains(other.ReferenceOn, t) {
				panic("algorithms: " + info.Name + " and " + other.Name + " are both the reference on " + t)
			}
		}
	}
	registry[info.Name] = info
}

// Reference returns the reference lock of topology (Info.ReferenceOn).
func Reference(topology string) (Info, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	for _, info := range registry {
		if slices.Contains(info.ReferenceOn, topology) {
			return info, nil
		}
	}
	return Info{}, fmt.Errorf("topology %q has no reference lock", topology)
}

// Unregister removes an algorithm added by Register; an unknown name is ignored. It is for
// temporary algorithms, such as the user's lock that locktest.Run registers for one test.
func Unregister(name string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	delete(registry, name)
}

// Lookup returns the algorithm with the given name.
func Lookup(name string) (Info, error) {
	registryMu.RLock()
	info, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return Info{}, fmt.Errorf("unknown algorithm %q (known: %v; `lockchaos list` shows them)", name, Names())
	}
	return info, nil
}

// Names lists the registered algorithms, sorted, without the mutants.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return namesLocked(false)
}

// MutantNames lists the registered mutants, sorted.
func MutantNames() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return namesLocked(true)
}

func namesLocked(mutants bool) []string {
	names := make([]string, 0, len(registry))
	for n, info := range registry {
		if (info.Mutant != "") == mutants {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// All returns every registered algorithm but the mutants, sorted by name.
func All() []Info { return infos(false) }

// Mutants returns every registered mutant (docs/design.md#mutants), sorted by name.
func Mutants() []Info { return infos(true) }

func infos(mutants bool) []Info {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := namesLocked(mutants)
	out := make([]Info, 0, len(names))
	for _, n := range names {
		out = append(out, registry[n])
	}
	return out
}

// withDefaults fills the zero fields of c.
func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Point == nil {
		c.Point = NoPoint
	}
	if c.Name == "" {
		c.Name = "lock"
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = DefaultOpTimeout(c.TTL)
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = 10 * time.Millisecond
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = c.TTL
	}
	if c.Rand == nil {
		// Deterministic per client, so a run without a seed is still reproducible.
		c.Rand = rand.New(rand.NewPCG(uint64(c.Client), 0x6c6f636b636861))
	}
	return c
}

// DefaultOpTimeout is the default bound of one request to a server for a lease of ttl (Config's
// and the harness's: decided here once): a quarter of the lease, at least 100 ms — generous
// enough for a loaded 2-core CI machine, short against the lease so that a black-holed request
// fails well before the lease ends.
func DefaultOpTimeout(ttl time.Duration) time.Duration { return max(ttl/4, 100*time.Millisecond) }
