package explore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/scenarios"
)

// Fault kinds explore aims, in the order the survey runs them: the cheap, fast ones first, the
// failover (a Sentinel cluster and a multi-second election per run) last.
const (
	KindCrash     = "client-crash"
	KindPause     = "client-pause"
	KindSlow      = "slow-release"
	KindPartition = "partition"
	KindRestart   = "restart"
	KindClockJump = "clock-jump"
	KindClockSkew = "clock-skew"
	KindFailover  = "failover"
)

// Kinds lists the fault kinds explore knows, in survey order.
var Kinds = []string{KindCrash, KindPause, KindSlow, KindPartition, KindRestart, KindClockJump, KindClockSkew, KindFailover}

// param names the fault parameter a kind's shrink varies ("" = nothing to shrink).
var param = map[string]string{
	KindPause: "pause", KindSlow: "latency", KindPartition: "partition",
	KindClockJump: "jump", KindClockSkew: "offset",
}

// setup is what every experiment of one algorithm shares: its topology and the lease a fault
// must outlast (the TTL, or ZooKeeper's session timeout).
type setup struct {
	alg      algorithms.Info
	topology string
	top      cluster.Topology // the descriptor of topology: explore asks it, never its name
	// replicated is a topology of the algorithm's with a replica to fail over to ("" = none).
	replicated string
	clients    int
	ttl        time.Duration
	session    time.Duration
	lease      time.Duration
}

func newSetup(info algorithms.Info, o Options) setup {
	s := setup{alg: info, topology: info.Topologies[0], clients: o.Clients, ttl: o.TTL,
		session: o.SessionTimeout, lease: o.TTL}
	s.top, _ = cluster.LookupTopology(s.topology)
	for _, name := range info.Topologies {
		if t, err := cluster.LookupTopology(name); err == nil && t.Has(cluster.TraitReplication) {
			s.replicated = name
			break
		}
	}
	if s.top.Has(cluster.TraitSessionLease) {
		if s.session == 0 {
			// Shorter sessions expire spuriously on a loaded 2-core machine (as the catalogue).
			s.session = max(o.TTL, time.Second)
		}
		s.lease = s.session
	}
	return s
}

// points returns the named points in the order a client reaches them: the algorithm's acquire
// points, the steps of the holder's critical section, then the algorithm's release points.
func (s setup) points() []string {
	var acq, rest []string
	for _, p := range s.alg.Points {
		if strings.HasPrefix(p, "acquire:") {
			acq = append(acq, p)
		} else {
			rest = append(rest, p)
		}
	}
	return slices.Concat(acq, harness.HolderSteps, rest)
}

// defaultParam is the size of a kind's fault in the survey: past the lease, as in the catalogue.
func (s setup) defaultParam(kind string) time.Duration {
	switch kind {
	case KindPause:
		return 2 * s.lease
	case KindSlow:
		// A late DEL does harm only while the next holder's lease is valid: between 1 and 2 TTLs.
		return s.ttl + s.ttl/2
	case KindPartition:
		return s.lease + max(s.lease, 300*time.Millisecond)
	case KindClockJump:
		return s.ttl
	case KindClockSkew:
		return 3 * s.ttl
	}
	return 0
}

// na says why a kind does not apply to this algorithm ("" when it does): the fault kind's answer
// on the topology the experiment runs on (faults.Unavailable), as the catalogue's and soak's.
func (s setup) na(kind string) string {
	top := s.top
	if kind == KindFailover {
		if s.replicated == "" {
			return "the algorithm runs on no topology with a replica to fail over to"
		}
		top, _ = cluster.LookupTopology(s.replicated)
	}
	return faults.Unavailable(faults.Spec{Kind: kind, Nodes: s.holder()}, top)
}

// workload is the experiment's workload. It depends on the kind and its survey size only, never on
// a shrink probe's parameter, so the parameter is the one thing a shrink varies.
func (s setup) workload(kind string) scenarios.Workload {
	p := s.defaultParam(kind)
	hold := 10 * time.Millisecond
	switch kind {
	case KindRestart, KindClockJump:
		// The holder must still hold when the next client is granted (the catalogue's 200 ms of 500).
		hold = max(hold, s.ttl*2/5)
	case KindPartition:
		// The holder writes while still cut off, after its lease (a ZooKeeper session) ran out on
		// the servers: a holder that writes after the heal has been told (the recipe's Valid),
		// and one within its lease proves nothing (catalogue: partition).
		hold = s.lease + (p-s.lease)/2
	}
	// The fault fires at the first critical section, so its effect shows by the fault's size plus
	// the hold; the liveness window after it is long enough for a crashed holder's lease to end.
	phase := p + hold
	switch kind {
	case KindPartition:
		phase = p // the holder's write falls inside the partition
	case KindCrash:
		// A crash silences the client's links until the fault phase ends; its library lives on
		// in-process, so the phase must outlast the lease or the healed links revive a ZooKeeper
		// session the server would have expired (a false "stuck").
		phase = 2*s.lease + hold
	}
	stuck := max(2*s.lease, 600*time.Millisecond) + hold
	w := scenarios.Workload{
		Clients: s.clients, TTL: d(s.ttl), Hold: d(hold), SessionTimeout: d(s.session),
		Duration: d(phase + s.lease/2 + 300*time.Millisecond), StuckAfter: d(stuck), Tail: d(stuck + 300*time.Millisecond),
	}
	if kind == KindPartition {
		w.AcquireTimeout = d(2*hold + s.lease)
	}
	return w
}

// failoverWorkload is the catalogue's: Sentinel needs ≈2 s to promote the replica, so the TTL and
// the hold outlast it whatever --ttl says.
var failoverWorkload = scenarios.Workload{Clients: 3, TTL: d(10 * time.Second), Hold: d(4 * time.Second),
	Duration: d(5 * time.Second), Tail: d(500 * time.Millisecond), OpTimeout: d(300 * time.Millisecond)}

// scenario builds the plain-data scenario of one experiment with the fault sized v. It is written
// to explore-scenarios.yaml too, so `lockchaos run --scenario-file` re-runs it.
func (s setup) scenario(e *Experiment, v time.Duration) scenarios.Scenario {
	name := e.ID
	if v != e.Tried.D() {
		name = fmt.Sprintf("%s-%dms", e.ID, v.Milliseconds())
	}
	sc := scenarios.Scenario{Name: name, Workload: s.workload(e.Fault),
		Summary: fmt.Sprintf("explore %s: %s", s.alg.Name, e.describe(v))}
	f := faults.Spec{Kind: e.Fault, Point: e.Point}
	switch e.Fault {
	case KindPause:
		f.For = faults.Fixed(v)
	case KindSlow:
		f.Amount, f.For = faults.Fixed(v), faults.Fixed(v+s.ttl)
	case KindPartition:
		f.Clients, f.For = "trigger", faults.Fixed(v)
	case KindClockSkew:
		f.Clients, f.Amount = "2", faults.Fixed(v)
	case KindClockJump:
		f.Amount = faults.Fixed(v)
		f.Nodes = s.holder()
	case KindRestart:
		f.Nodes = s.holder()
	case KindFailover:
		sc.Workload = failoverWorkload
		sc.Variants = map[string]scenarios.Variant{s.alg.Name: {Topology: s.replicated}}
	}
	sc.Faults = []faults.Spec{f}
	if s.top.Has(cluster.TraitIndependentNodes) && (e.Fault == KindRestart || e.Fault == KindClockJump) {
		sc.Faults = scenarios.BareMajority(f, s.clients, faults.Fixed(s.ttl*3/5))
	}
	return sc
}

// holder names the node that holds the key: the leader where the nodes elect one, else the
// master (the one node, or Redlock's first).
func (s setup) holder() string {
	if s.top.Has(cluster.TraitLeader) {
		return "leader"
	}
	return "master"
}

// plan lists every (point, fault) pair of the algorithm, in survey order, filtered by o.
func (s setup) plan(o Options) []*Experiment {
	var out []*Experiment
	want := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
	for _, kind := range Kinds {
		if !want(o.Faults, kind) {
			continue
		}
		pts := s.points()
		if kind == KindClockSkew {
			pts = []string{""} // a clock runs ahead from the start: once per algorithm
		}
		for _, p := range pts {
			if p != "" && !want(o.Points, p) {
				continue
			}
			e := &Experiment{Point: p, Fault: kind, Param: param[kind], Tried: d(s.defaultParam(kind))}
			e.ID = "explore-" + slug(p, kind)
			if why := s.na(kind); why != "" {
				e.Status, e.Skipped = StatusNA, why
			}
			out = append(out, e)
		}
	}
	return out
}

func slug(point, kind string) string {
	if point == "" {
		return kind
	}
	// The name becomes a directory: anything but letters, digits, dots and dashes becomes a dash.
	safe := strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, point)
	return safe + "-" + kind
}

func d(v time.Duration) scenarios.Duration { return scenarios.Duration(v) }
