package algorithms

import (
	"fmt"
	"math/rand/v2"
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
	// Renews, when set, is the period at which the lock renews its lease in the background (a
	// watchdog, a heartbeat, a keepalive): faults sized to outlast the lease outlast it by one
	// renewal period more (faults.Size's "renewal", DESIGN.md §18). 0: no background renewal.
	Renews time.Duration
	// Mutant, when set, marks a mutant (DESIGN.md §11): the name of the real algorithm it breaks.
	// Mutants are hidden from Names and All (so from `list` and the default matrix), listed by
	// Mutants, and found by Lookup.
	Mutant string
	// Removed says, for a mutant, the one mechanism removed from the real algorithm.
	Removed string
	// New builds one client's Locker.
	New func(Config) (Locker, error)
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
	registry[info.Name] = info
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

// Mutants returns every registered mutant (DESIGN.md §11), sorted by name.
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
		c.OpTimeout = max(c.TTL/10, 50*time.Millisecond)
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
