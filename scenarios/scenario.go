// Package scenarios is the catalogue: named scenarios, each a topology, a workload, a fault schedule
// and the verdict expected of every algorithm. Scenarios are plain data; they run nothing.
package scenarios

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
)

// Duration reads and writes as a Go duration string.
type Duration = faults.Duration

// Workload is what the clients do in a scenario. Zero fields take the harness's defaults.
type Workload struct {
	Clients        int      `yaml:"clients,omitempty" json:"clients,omitempty"`
	TTL            Duration `yaml:"ttl,omitempty" json:"ttl,omitempty"`
	Hold           Duration `yaml:"hold,omitempty" json:"hold,omitempty"`
	Think          Duration `yaml:"think,omitempty" json:"think,omitempty"`
	AcquireTimeout Duration `yaml:"acquire_timeout,omitempty" json:"acquire_timeout,omitempty"`
	ReleaseTimeout Duration `yaml:"release_timeout,omitempty" json:"release_timeout,omitempty"`
	OpTimeout      Duration `yaml:"op_timeout,omitempty" json:"op_timeout,omitempty"`
	SessionTimeout Duration `yaml:"session_timeout,omitempty" json:"session_timeout,omitempty"`
	Fencing        bool     `yaml:"fencing,omitempty" json:"fencing,omitempty"`
	// LockPerClient gives each client its own lock: a throughput workload (harness.Config).
	LockPerClient bool `yaml:"lock_per_client,omitempty" json:"lock_per_client,omitempty"`
	// ZeroHold and ZeroThink are set when a scenario file says "hold: 0s" or "think: 0s": a zero
	// that means zero, where an absent field takes the default.
	ZeroHold  bool `yaml:"-" json:"zero_hold,omitempty"`
	ZeroThink bool `yaml:"-" json:"zero_think,omitempty"`
	// Duration is the fault phase; StuckAfter and Tail as in harness.Config.
	Duration   Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	StuckAfter Duration `yaml:"stuck_after,omitempty" json:"stuck_after,omitempty"`
	Tail       Duration `yaml:"tail,omitempty" json:"tail,omitempty"`
	// ServerIdleTimeout makes a SQL server end a session idle that long (cluster.Spec's
	// SessionIdleTimeout): a server setting the scenario runs under.
	ServerIdleTimeout Duration `yaml:"server_idle_timeout,omitempty" json:"server_idle_timeout,omitempty"`
}

// merge returns w with the non-zero fields of o laid over it.
func (w Workload) merge(o Workload) Workload {
	set := func(dst *Duration, v Duration) {
		if v != 0 {
			*dst = v
		}
	}
	if o.Clients != 0 {
		w.Clients = o.Clients
	}
	set(&w.TTL, o.TTL)
	set(&w.Hold, o.Hold)
	set(&w.Think, o.Think)
	set(&w.AcquireTimeout, o.AcquireTimeout)
	set(&w.ReleaseTimeout, o.ReleaseTimeout)
	set(&w.OpTimeout, o.OpTimeout)
	set(&w.SessionTimeout, o.SessionTimeout)
	set(&w.Duration, o.Duration)
	set(&w.StuckAfter, o.StuckAfter)
	set(&w.Tail, o.Tail)
	set(&w.ServerIdleTimeout, o.ServerIdleTimeout)
	w.Fencing = w.Fencing || o.Fencing
	w.LockPerClient = w.LockPerClient || o.LockPerClient
	if o.Hold != 0 {
		w.ZeroHold = false
	}
	if o.Think != 0 {
		w.ZeroThink = false
	}
	w.ZeroHold = w.ZeroHold || o.ZeroHold
	w.ZeroThink = w.ZeroThink || o.ZeroThink
	return w
}

// Variant changes a scenario for one algorithm (or a family, see Scenario.Variants).
type Variant struct {
	Topology string `yaml:"topology,omitempty" json:"topology,omitempty"`
	Nodes    int    `yaml:"nodes,omitempty" json:"nodes,omitempty"`
	// Faults, when set, replace the scenario's faults.
	Faults   []faults.Spec `yaml:"faults,omitempty" json:"faults,omitempty"`
	Workload Workload      `yaml:"workload,omitempty" json:"workload,omitempty"`
}

// Scenario is one entry of the catalogue.
type Scenario struct {
	Name string `yaml:"name" json:"name"`
	// Summary says what the scenario does; Reproduces names the published failure it shows and
	// Needs the fault parameters it depends on.
	Summary    string `yaml:"summary" json:"summary"`
	Reproduces string `yaml:"reproduces,omitempty" json:"reproduces,omitempty"`
	Needs      string `yaml:"needs,omitempty" json:"needs,omitempty"`

	Workload Workload      `yaml:"workload,omitempty" json:"workload,omitempty"`
	Faults   []faults.Spec `yaml:"faults,omitempty" json:"faults,omitempty"`
	// Requires are the traits a topology's servers must have to show what the scenario names (a
	// pooler, servers that end idle sessions): a cell on a topology without them — a lock's
	// default or one chosen with --topology — is n/a, not a run that could not fail. What its
	// faults need, each fault kind says itself (faults.Unavailable); this is the rest.
	Requires []cluster.Trait `yaml:"requires,omitempty" json:"requires,omitempty"`
	// Variants are keyed by algorithm name, or by family: "redis" (the single-node Redis locks),
	// "redlock", "zookeeper". An algorithm's own entry wins over its family's.
	Variants map[string]Variant `yaml:"variants,omitempty" json:"variants,omitempty"`
	// Expect maps an algorithm to its expected verdict: S (safe), Us (unsafe, service class),
	// Uc (unsafe, client class), U (unsafe, either class), X (stuck) — checker.ParseExpectation's
	// codes — or "-: reason" when the cell makes no sense. An algorithm not listed is not
	// expected anything. A race is not an expectation: a scenario forces it at its point
	// (docs/design.md#evidence).
	Expect map[string]string `yaml:"expect,omitempty" json:"expect,omitempty"`
	// Catches maps a mutant (algorithms.Mutants, docs/design.md#mutants) to the verdict the scenario must
	// catch it with: Us, Uc or X, with an optional comment after a colon, as in Expect. A mutant
	// runs its real algorithm's variants (and its own, when the scenario has one).
	Catches map[string]string `yaml:"catches,omitempty" json:"catches,omitempty"`
}

// Cell is a scenario resolved for one algorithm: everything a run needs.
type Cell struct {
	Scenario  string
	Algorithm string
	// Lock is the algorithm's Info: the lock itself travels with the cell, so nothing downstream
	// looks its name up again (locktest's lock is in no registry).
	Lock     algorithms.Info
	Topology string // "" = the algorithm's default
	// On is the topology chosen for the cell (CellOn), "" when it runs where the catalogue says.
	On       string
	Nodes    int
	Workload Workload
	Faults   []faults.Spec
	// Expected is a verdict ("safe", "unsafe-service", ...) or "" when none is expected.
	Expected string
	// NA is the reason the cell makes no sense, when it does not.
	NA string
	// Why is the expectation's comment: what makes the cell come out as expected (its
	// mechanism, the published source it confirms).
	Why string
}

// Family returns the variant family of a lock: its own (a process client's manifest may set it),
// else its first topology's (cluster.Topology.Family). A user's Redlock or ZooKeeper recipe thus
// runs its topology's variants, not a built-in's.
func Family(lock algorithms.Info) string {
	if lock.Family != "" {
		return lock.Family
	}
	if len(lock.Topologies) > 0 {
		if t, err := cluster.LookupTopology(lock.Topologies[0]); err == nil {
			return t.Family
		}
	}
	return ""
}

// Cell resolves the scenario for a registered algorithm, by name.
func (s Scenario) Cell(algorithm string) (Cell, error) { return s.CellOn(algorithm, "") }

// CellOn resolves the scenario for a registered algorithm, by name, on a topology (see CellFor).
func (s Scenario) CellOn(algorithm, topology string) (Cell, error) {
	lock, err := algorithms.Lookup(algorithm)
	if err != nil {
		return Cell{Scenario: s.Name, Algorithm: algorithm}, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return s.CellFor(lock, topology)
}

// CellFor resolves the scenario for a lock, given as its Info, on a topology of its own choosing
// (one of its Info.Topologies; "" = the scenario's or the lock's default). On a chosen topology
// the variants keyed "@topology" and "algorithm@topology" apply after the others, and the
// expectation is the one given for that topology (ExpectOn); without one, the cell expects
// nothing — unless the topology is the one the cell runs on anyway. A cell whose topology cannot
// show what the scenario names (cannotShow) is n/a with the reason.
func (s Scenario) CellFor(lock algorithms.Info, topology string) (Cell, error) {
	algorithm := lock.Name
	c := Cell{Scenario: s.Name, Algorithm: algorithm, Lock: lock, Workload: s.Workload, Faults: s.Faults}
	real, mutant, family := algorithm, false, Family(lock)
	if lock.Mutant != "" {
		real, mutant = lock.Mutant, true
	}
	keys := []string{family, real}
	if mutant {
		keys = append(keys, algorithm) // a variant of the mutant's own wins
	}
	// The variants of the topology the cell runs on apply after the others, whether it was chosen
	// or is the lock's own: a process client or a user's lock whose first topology is
	// redis-cluster takes its "@redis-cluster" variants as a built-in run there does.
	natural := s.naturalTopology(keys, lock)
	on := cmp.Or(topology, natural)
	keys = append(keys, "@"+on, real+"@"+on)
	if mutant {
		keys = append(keys, algorithm+"@"+on)
	}
	for _, key := range keys {
		if v, ok := s.Variants[key]; ok {
			if v.Topology != "" {
				c.Topology = v.Topology
			}
			if v.Nodes != 0 {
				c.Nodes = v.Nodes
			}
			if v.Faults != nil {
				c.Faults = v.Faults
			}
			c.Workload = c.Workload.merge(v.Workload)
		}
	}
	code, ok := s.Expect[algorithm]
	if !ok {
		code, ok = extraExpect[s.Name][algorithm]
	}
	if mutant {
		code, ok = s.Catches[algorithm]
	}
	if topology != "" {
		c.Topology, c.On = topology, topology
		if on, found := extraExpect[s.Name][algorithm+"@"+topology]; found {
			code, ok = on, true
		} else if topology != natural {
			ok = false
		}
	}
	where := c.Topology
	if where == "" {
		where = s.naturalTopology(keys, lock)
	}
	c.Faults = offered(c.Faults, lock, where)
	if why := s.cannotShow(c, where); why != "" {
		if ok && !strings.HasPrefix(code, "-") {
			return c, fmt.Errorf("scenario %s: %s on %s is expected %q, but %s (write \"-: why\")",
				s.Name, algorithm, where, code, why)
		}
		if !ok {
			code, ok = "-: "+why, true
		}
	}
	if !ok {
		return c, nil
	}
	if reason, na := strings.CutPrefix(code, "-"); na {
		c.NA = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(reason), ":"))
		if c.NA == "" {
			return c, fmt.Errorf("scenario %s: expectation of %s is n/a without a reason (write \"-: why\")", s.Name, algorithm)
		}
		return c, nil
	}
	head, why, _ := strings.Cut(code, ":")
	c.Why = strings.TrimSpace(why)
	v, ok := checker.ParseExpectation(head)
	if !ok {
		return c, fmt.Errorf("scenario %s: expectation %q of %s is not one of %s or \"-: reason\"", s.Name, code, algorithm, strings.Join(checker.ExpectationCodes(), ", "))
	}
	c.Expected = v
	return c, nil
}

// naturalTopology is the topology a cell runs on when none is chosen: its variants', else the
// lock's default.
func (s Scenario) naturalTopology(keys []string, lock algorithms.Info) string {
	t := ""
	for _, key := range keys {
		if v, ok := s.Variants[key]; ok && v.Topology != "" {
			t = v.Topology
		}
	}
	if t == "" && len(lock.Topologies) > 0 {
		t = lock.Topologies[0]
	}
	return t
}

// cannotShow returns "" when cell c can run on topology where, else why not: the lock does not
// run there, the topology lacks a trait the scenario requires, or one of the cell's faults cannot
// act there (faults.Unavailable). It asks the owners — the lock's Info, the topology's
// descriptor, each fault kind — and names none of them itself.
func (s Scenario) cannotShow(c Cell, where string) string {
	if where == "" {
		return ""
	}
	if len(c.Lock.Topologies) > 0 && !slices.Contains(c.Lock.Topologies, where) {
		return fmt.Sprintf("the lock does not run on %s (it runs on %s)", where, strings.Join(c.Lock.Topologies, ", "))
	}
	for _, f := range c.Faults {
		if why, ok := c.Lock.Unreached[f.Kind]; ok {
			return f.Kind + " cannot reach the lock: " + why
		}
	}
	t, err := cluster.LookupTopology(where)
	if err != nil {
		return ""
	}
	needs := slices.Clone(s.Requires)
	if c.Workload.ServerIdleTimeout > 0 {
		needs = append(needs, cluster.TraitIdleTimeout)
	}
	if why := t.Lacks(needs...); why != "" {
		return why
	}
	for _, f := range c.Faults {
		if why := faults.Unavailable(f, t); why != "" {
			return why
		}
	}
	return ""
}

// offered leaves out of a cell the refinements (faults.Spec.Refinement) it cannot aim: at a named
// point the lock does not mark (a point of a built-in's own acquire or release,
// "acquire:after-quorum"), or at a command on the wire of a topology whose links lockchaos does not
// parse. A refinement is never a requirement — the harness's points and, where parsed, the wire
// reach every lock — and a fault that could never fire would leave the cell without evidence.
// Other faults stay: a user's own scenario may aim at a point their lock calls without declaring
// it, and a cell whose other faults cannot act on its topology is n/a (cannotShow).
func offered(fs []faults.Spec, lock algorithms.Info, where string) []faults.Spec {
	top, known := cluster.LookupTopology(where)
	var out []faults.Spec
	for _, f := range fs {
		switch {
		case !f.Refinement:
		case f.Point != "" && !strings.HasPrefix(f.Point, "cs:") && !slices.Contains(lock.Points, f.Point):
			continue
		case known == nil && faults.Unavailable(f, top) != "":
			continue
		}
		out = append(out, f)
	}
	if len(out) == len(fs) {
		return fs
	}
	return out
}

// Validate checks a scenario's own fields and faults.
func (s Scenario) Validate() error {
	if s.Name == "" {
		return fmt.Errorf("scenario without a name")
	}
	check := func(where string, fs []faults.Spec) error {
		for i, f := range fs {
			if err := f.Validate(); err != nil {
				return fmt.Errorf("scenario %s: %sfaults[%d]: %w", s.Name, where, i, err)
			}
		}
		return nil
	}
	if err := check("", s.Faults); err != nil {
		return err
	}
	for k, v := range s.Variants {
		if err := check("variants."+k+".", v.Faults); err != nil {
			return err
		}
	}
	for alg := range s.Expect {
		if _, err := s.Cell(alg); err != nil {
			return err
		}
	}
	for m, code := range s.Catches {
		if info, err := algorithms.Lookup(m); err != nil || info.Mutant == "" {
			return fmt.Errorf("scenario %s: catches %s, which is not a mutant (`lockchaos list --mutants` shows them)", s.Name, m)
		}
		c, err := s.Cell(m)
		if err != nil {
			return err
		}
		switch c.Expected {
		case "unsafe-service", "unsafe-client", "unsafe-lost", "stuck":
		default:
			return fmt.Errorf("scenario %s: catches %s with %q; want Us, Uc, Ul or X", s.Name, m, code)
		}
	}
	return nil
}

var catalogue = map[string]Scenario{}

// extraExpect holds expectations of algorithms added after the seven seed ones, by scenario and
// algorithm, so each new algorithm keeps its whole column in its own file (see Expect).
var extraExpect = map[string]map[string]string{}

// Expect adds the expectations of one algorithm, by scenario, in the codes of Scenario.Expect.
// Call it from an init function; an unknown scenario or a bad code panics (a programming error).
func Expect(algorithm string, byScenario map[string]string) {
	if err := AddExpect(algorithm, byScenario); err != nil {
		panic("scenarios: " + err.Error())
	}
}

// ExpectOn is Expect for an algorithm run on a topology other than its default (CellOn): the
// column of "algorithm on topology". A mutant's entries are what the scenario must catch it with
// there. Call it from an init function.
func ExpectOn(algorithm, topology string, byScenario map[string]string) {
	if err := AddExpectOn(algorithm, topology, byScenario); err != nil {
		panic("scenarios: " + err.Error())
	}
}

// AddExpect is Expect for expectations that come from outside the code (a process client's
// manifest): an unknown scenario, or a verdict the topology cannot show, is an error, and
// nothing of byScenario is kept.
func AddExpect(algorithm string, byScenario map[string]string) error {
	return addExpect(algorithm, "", byScenario)
}

// AddExpectOn is ExpectOn as AddExpect is Expect.
func AddExpectOn(algorithm, topology string, byScenario map[string]string) error {
	return addExpect(algorithm, topology, byScenario)
}

func addExpect(algorithm, topology string, byScenario map[string]string) error {
	key := algorithm
	if topology != "" {
		key += "@" + topology
	}
	type was struct {
		scen, code string
		had        bool
	}
	var added []was
	undo := func() {
		for _, w := range added {
			if w.had {
				extraExpect[w.scen][key] = w.code
			} else {
				delete(extraExpect[w.scen], key)
			}
		}
	}
	for _, scen := range slices.Sorted(maps.Keys(byScenario)) {
		s, ok := catalogue[scen]
		if !ok {
			undo()
			return fmt.Errorf("expectation for unknown scenario %s", scen)
		}
		if extraExpect[scen] == nil {
			extraExpect[scen] = map[string]string{}
		}
		code, had := extraExpect[scen][key]
		added = append(added, was{scen, code, had})
		extraExpect[scen][key] = byScenario[scen]
		var err error
		if topology == "" {
			_, err = s.Cell(algorithm)
		} else {
			_, err = s.CellOn(algorithm, topology)
		}
		if err != nil {
			undo()
			return err
		}
	}
	return nil
}

func register(s Scenario) {
	if err := s.Validate(); err != nil {
		panic(err)
	}
	catalogue[s.Name] = s
}

// Lookup returns the named scenario of the catalogue.
func Lookup(name string) (Scenario, error) {
	s, ok := catalogue[name]
	if !ok {
		return s, fmt.Errorf("unknown scenario %q (known: %s; `lockchaos list` shows them)", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// Names lists the catalogue in its display order.
func Names() []string {
	names := make([]string, 0, len(catalogue))
	for n := range catalogue {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool { return order(names[a]) < order(names[b]) })
	return names
}

// All returns the catalogue in display order.
func All() []Scenario {
	out := make([]Scenario, 0, len(catalogue))
	for _, n := range Names() {
		out = append(out, catalogue[n])
	}
	return out
}

// displayOrder is docs/design.md#catalogue-and-expectations's order; scenarios added later sort after it by name.
var displayOrder = []string{"baseline", "client-crash", "client-pause", "clock-skew", "slow-release",
	"failover", "restart", "clock-jump", "partition", "latency", "getset-race", "node-kill", "zk-leader-kill"}

func order(name string) string {
	for i, n := range displayOrder {
		if n == name {
			return fmt.Sprintf("%03d", i)
		}
	}
	return "999" + name
}

func ms(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }

// fixed is n ms as a fault's size, whatever the lock's lease: a wait or a timing of the scenario's
// own, or a size measured against a session rather than a lease.
func fixed(n int) faults.Size { return faults.Fixed(time.Duration(n) * time.Millisecond) }

// leases is n leases of the lock under test plus plus ms (docs/design.md#faults-sized-to-the-lease), resolved when the fault
// fires: at the catalogue's 500 ms lease, n×500+plus ms, and longer for a lock that holds longer.
func leases(n float64, plus int) faults.Size {
	return faults.Leases(n, time.Duration(plus)*time.Millisecond)
}

// outlast is n leases and one renewal period of the lock under test, plus plus ms: the length of
// a fault that must outlast the lease however a background renewal extended it (docs/design.md#faults-sized-to-the-lease).
func outlast(n float64, plus int) faults.Size {
	z := leases(n, plus)
	z.Renewals = 1
	return z
}
