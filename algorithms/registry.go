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

// Names lists the registered algorithms, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// All returns every registered algorithm, sorted by name.
func All() []Info {
	names := Names()
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]Info, 0, len(names))
	for _, n := range names {
		if info, ok := registry[n]; ok {
			out = append(out, info)
		}
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
