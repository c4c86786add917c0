package soak

import (
	"errors"
	"fmt"
	"github.com/lockchaos/lockchaos/cluster"
	"math"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/faults"
)

func infos(t *testing.T, names ...string) []algorithms.Info {
	t.Helper()
	var out []algorithms.Info
	for _, n := range names {
		info, err := algorithms.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, info)
	}
	return out
}

// TestPlanFollowsTheSeed: a plan is a pure function of its seed and arguments, every fault in it
// is valid and heals, the faults arrive at about the rate asked, and another seed draws another
// plan.
func TestPlanFollowsTheSeed(t *testing.T) {
	is := infos(t, "token", "redlock", "zookeeper")
	kinds, err := kindsFor(nil, topos(t, []string{"redis-single", "redis-multi", "zookeeper"}...))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(kinds, "clock-jump") || !slices.Contains(kinds, "partition") {
		t.Fatalf("kinds for Redis and ZooKeeper %v: want partition, and no clock-jump (ZooKeeper's sessions do not follow a wall clock)", kinds)
	}
	a := NewPlan(7, 10*time.Minute, 12, kinds, is, 0, 0)
	b := NewPlan(7, 10*time.Minute, 12, kinds, is, 0, 0)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed drew two plans")
	}
	if c := NewPlan(8, 10*time.Minute, 12, kinds, is, 0, 0); reflect.DeepEqual(a.Faults, c.Faults) {
		t.Fatal("seeds 7 and 8 drew the same plan")
	}
	// The rate counts the faults drawn on their own: not a holder's work at a grant, nor a fault
	// that follows another onto its victim.
	if n := len(slices.DeleteFunc(slices.Clone(a.Faults), func(f faults.Spec) bool { return f.Client != 0 || f.Kind == "client-stall" })); n < 90 || n > 150 {
		t.Errorf("%d faults drawn on their own in 10 minutes at 12 a minute, want about 120", n)
	}
	if len(a.Drawn) != len(a.Faults) {
		t.Fatalf("%d names for %d faults", len(a.Drawn), len(a.Faults))
	}
	seen := map[string]bool{}
	last := time.Duration(0)
	for i, f := range a.Faults {
		if err := f.Validate(); err != nil {
			t.Errorf("fault %d (%s): %v", i+1, a.Drawn[i], err)
		}
		if f.At.D() < last || f.At.D() < time.Second || f.At.D() > 10*time.Minute-2*time.Second {
			t.Errorf("fault %d at %s: want in time order, from 1 s to 2 s before the end", i+1, f.At)
		}
		last = f.At.D()
		m := faults.MeaningOf(f)
		if m.Lasting && f.For.IsZero() && f.Kind != "clock-jump" {
			t.Errorf("fault %d (%s) lasts the run: a soak's faults heal", i+1, f.Kind)
		}
		seen[a.Drawn[i]] = true
	}
	for _, k := range kinds {
		if !seen[k] {
			t.Errorf("no %s in 10 minutes of the plan", k)
		}
	}
	// Server faults one at a time: a node being restarted cannot also be paused.
	var busy time.Duration
	for i, f := range a.Faults {
		if f.Kind != "restart" && f.Kind != "pause-server" && f.Kind != "clock-jump" {
			continue
		}
		if f.At.D() < busy {
			t.Errorf("fault %d (%s at %s) starts while the server fault before it lasts (until %s)", i+1, f.Kind, f.At, busy)
		}
		busy = f.At.D() + f.For.D()
	}
	if err := a.Validate(); err != nil {
		t.Errorf("the plan is not a valid scenario: %v", err)
	}
}

// TestPlanAimsAtDangerousMoments: a Redlock soak draws restarts at a client's grant (the holder
// works on when the node is back: the moment a restart breaks a lock) beside timed ones, and
// partial partitions that leave a client a bare majority; neither is refused on a quorum.
func TestPlanAimsAtDangerousMoments(t *testing.T) {
	kinds, err := kindsFor(nil, topos(t, []string{"redis-multi"}...))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(kinds, "partition-minority") {
		t.Fatalf("kinds for Redlock %v: want partition-minority", kinds)
	}
	pl := NewPlan(1, 10*time.Minute, 12, kinds, infos(t, "redlock"), 0, 0)
	var atGrant, timed, minority int
	for i, f := range pl.Faults {
		switch {
		case f.Kind == "restart" && f.Point == "cs:acquired" && f.For.IsZero():
			atGrant++
		case f.Kind == "restart" && f.Point == "" && f.For.D() > 0:
			timed++
		case pl.Drawn[i] == "partition-minority":
			if (f.Kind != "partition" && f.Kind != "refuse") || f.Nodes != "minority" || f.Clients == "" {
				t.Errorf("fault %d: partition-minority drew %+v", i+1, f)
			}
			minority++
		}
	}
	if atGrant == 0 || timed == 0 || minority == 0 {
		t.Errorf("10 minutes of Redlock: %d restarts at a grant, %d timed, %d partial partitions: want each", atGrant, timed, minority)
	}
}

// TestPlanHoldsOnAtGrants: a fault at a grant comes, sometimes, with its holder working on at that
// same grant — a client-stall at the same moment, point and skip, right after it in the plan (the
// nemesis fires a point's faults in plan order) and named long-hold — and the clients wait for
// replies longer than a lease, so a reply held on the wire until another client holds still
// reaches its client (getset's GET-then-DEL release and setnx-px's slow grant were safe under 12
// such faults each with the standard TTL/4).
func TestPlanHoldsOnAtGrants(t *testing.T) {
	kinds, err := kindsFor(nil, topos(t, []string{"redis-single"}...))
	if err != nil {
		t.Fatal(err)
	}
	pl := NewPlan(1, 10*time.Minute, 12, kinds, infos(t, "setnx-expire"), 0, 0)
	if op, ttl := pl.Workload.OpTimeout.D(), pl.Workload.TTL.D(); op <= ttl {
		t.Errorf("request timeout %v, TTL %v: a reply held a lease on the wire never reaches its client", op, ttl)
	}
	held := map[string]int{}
	jumpsAtGrant := 0
	for i, f := range pl.Faults {
		if f.Kind == "clock-jump" && f.Point == "cs:acquired" {
			jumpsAtGrant++
		}
		if pl.Drawn[i] != longHold {
			continue
		}
		if i == 0 {
			t.Fatalf("the plan starts with a long-hold")
		}
		prev := pl.Faults[i-1]
		if f.Kind != "client-stall" || f.Point != "cs:acquired" || f.At != prev.At || f.Point != prev.Point || f.Skip != prev.Skip ||
			f.For.D() < 300*time.Millisecond || f.Clients != "" {
			t.Errorf("fault %d: long-hold %+v after %+v: want a client-stall of the same grant (no clients: its trigger)", i+1, f, prev)
		}
		held[pl.Drawn[i-1]]++
	}
	for _, k := range []string{"partition", "restart", "clock-jump"} {
		if held[k] == 0 {
			t.Errorf("10 minutes: no %s with its holder working on (%v)", k, held)
		}
	}
	if jumpsAtGrant == 0 {
		t.Errorf("10 minutes: no clock-jump at a grant")
	}
}

// TestPlanComposesFaults: a fault on one client is, sometimes, followed by another at that
// client's first grant from then on, drawn before the first heals, with the holder working on; a
// partial partition is followed by a fault on a node the client still reaches. Ten minutes of
// Redlock have such pairs, restarts or clock jumps after partial partitions among them.
func TestPlanComposesFaults(t *testing.T) {
	kinds, err := kindsFor(nil, topos(t, []string{"redis-multi"}...))
	if err != nil {
		t.Fatal(err)
	}
	pl := NewPlan(1, 10*time.Minute, 12, kinds, infos(t, "redlock"), 0, 0)
	pairs, onBareMajority := 0, 0
	for i, f := range pl.Faults {
		if f.Client == 0 || f.Kind == "client-stall" {
			continue
		}
		pairs++
		if f.Point != "cs:acquired" || f.Skip != 0 {
			t.Errorf("fault %d (%s) %+v follows another: want it at its victim's first grant (skip 0)", i+1, pl.Drawn[i], f)
		}
		// Its first fault: on that client, drawn before it and lasting past its start.
		first := slices.IndexFunc(pl.Faults[:i], func(o faults.Spec) bool {
			return o.Clients == strconv.Itoa(f.Client) && o.Point == "" && o.At <= f.At && f.At.D() < o.At.D()+o.For.D()
		})
		if first < 0 {
			t.Errorf("fault %d (%s at %s on client %d's grant) follows no fault on that client", i+1, pl.Drawn[i], f.At, f.Client)
			continue
		}
		if i+1 >= len(pl.Faults) || pl.Drawn[i+1] != longHold || pl.Faults[i+1].Client != f.Client || pl.Faults[i+1].At != f.At {
			t.Errorf("fault %d (%s) follows fault %d: want its holder working on right after it in the plan", i+1, pl.Drawn[i], first+1)
		}
		if pl.Drawn[first] == "partition-minority" {
			if f.Nodes != "random-majority" {
				t.Errorf("fault %d (%s on nodes %q) after a partial partition: want a fault on a node the client reaches (random-majority)", i+1, f.Kind, f.Nodes)
			}
			onBareMajority++
		}
	}
	if pairs == 0 || onBareMajority == 0 {
		t.Errorf("10 minutes of Redlock: %d faults at a victim's grant, %d of them a node's after a partial partition: want some of each", pairs, onBareMajority)
	}
}

// TestKindsRefused: an unknown fault, or one a topology cannot take, is bad input naming it.
func TestKindsRefused(t *testing.T) {
	for _, tc := range []struct {
		kinds      []string
		topologies []string
	}{
		{[]string{"meteor"}, []string{"redis-single"}},
		{[]string{"clock-jump"}, []string{"redis-single", "zookeeper"}},
		{[]string{"session-kill"}, []string{"redis-single"}},
		{[]string{"late-release"}, []string{"etcd"}},
		{[]string{"slow-grant"}, []string{"mariadb"}},
		{[]string{"late-release"}, []string{"postgres"}},
		{[]string{"partition-minority"}, []string{"redis-multi", "redis-single"}},
	} {
		if _, err := kindsFor(tc.kinds, topos(t, tc.topologies...)); !errors.Is(err, ErrBadOptions) {
			t.Errorf("kinds %v on %v: %v, want a bad option", tc.kinds, tc.topologies, err)
		}
	}
}

// TestKindsOnEveryTopology: a soak's default mix on any topology holds only faults that can act
// there — a SQL or etcd soak none aimed at the wire (it ended at once on "no parsed link" before),
// a SQL soak its session kill — and is never empty.
func TestKindsOnEveryTopology(t *testing.T) {
	for _, top := range cluster.AllTopologies() {
		kinds, err := kindsFor(nil, []cluster.Topology{top})
		if err != nil {
			t.Errorf("%s: %v", top.Name, err)
			continue
		}
		wire := slices.Contains(kinds, "late-release") || slices.Contains(kinds, "slow-grant")
		if wire != (top.Wire != "") {
			t.Errorf("%s (wire %q): soak mixes %v", top.Name, top.Wire, kinds)
		}
		if slices.Contains(kinds, "session-kill") != top.Has(cluster.TraitSessions) {
			t.Errorf("%s: soak mixes %v, sessions %v", top.Name, kinds, top.Has(cluster.TraitSessions))
		}
	}
}

// TestPoissonInterval: Garwood's exact intervals, against the published table values.
func TestPoissonInterval(t *testing.T) {
	for _, tc := range []struct {
		k      int
		lo, hi float64
	}{{0, 0, 3.689}, {1, 0.0253, 5.572}, {10, 4.795, 18.39}, {100, 81.36, 121.6}} {
		lo, hi := poissonInterval(tc.k)
		if math.Abs(lo-tc.lo) > 0.01*max(tc.lo, 0.1) || math.Abs(hi-tc.hi) > 0.01*tc.hi {
			t.Errorf("k=%d: [%.4g, %.4g], want [%.4g, %.4g]", tc.k, lo, hi, tc.lo, tc.hi)
		}
	}
	r := poissonRate(6, 0.5)
	if r.Value != 12 || r.Lo >= 12 || r.Hi <= 12 {
		t.Errorf("6 in half an hour: %+v, want 12 an hour inside its interval", r)
	}
}

// TestPlanRoundTrip: the plan written for --replay reads back the same, and the scenario file
// beside it runs the same faults.
func TestPlanRoundTrip(t *testing.T) {
	kinds, err := kindsFor(nil, topos(t, []string{"redis-single"}...))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlan(3, time.Minute, 30, kinds, infos(t, "token"), 3, 300*time.Millisecond)
	dir := t.TempDir()
	if err := writePlan(dir, p); err != nil {
		t.Fatal(err)
	}
	q, err := loadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Errorf("plan read back differs:\n%+v\n%+v", p, q)
	}
	ex := p.excerpt("x", []int{3, 5})
	if len(ex.Faults) != 2 || ex.Faults[0].At != faults.Duration(time.Second) ||
		ex.Faults[1].At.D()-ex.Faults[0].At.D() != p.Faults[4].At.D()-p.Faults[2].At.D() {
		t.Errorf("excerpt of faults 3 and 5: %+v, want them moved to start at 1 s, 3 to 5 apart as in the plan", ex.Faults)
	}
}

// TestSummarize: violations are grouped by the plan's names of the faults open at them and by
// class; an incident is one broken acquisition; a replay reproduces the first violation when a
// violation of its comes under at least the same faults.
func TestSummarize(t *testing.T) {
	plan := Plan{Time: faults.Duration(time.Hour), Drawn: []string{"client-pause", "late-release", "partition"}}
	plan.Faults = []faults.Spec{{Kind: "client-pause"}, {Kind: "latency"}, {Kind: "partition"}}
	v := func(at float64, acq int64, class checker.Class, fs ...int64) checker.Violation {
		return checker.Violation{Kind: "exclusion", Class: class, AtMs: at, A: checker.OpRef{ID: acq}, Faults: fs}
	}
	vs := []checker.Violation{
		v(10, 1, checker.ClientClass, 11), v(11, 1, checker.ClientClass, 11), v(12, 1, checker.ClientClass, 11), // one pause, one holder overlapped thrice
		v(50, 7, checker.ServiceClass, 12, 13),
		v(90, 9, checker.ClientClass), // no fault open
	}
	out := &checker.Outcome{Result: checker.Result{Verdict: checker.Unsafe, DurationMs: 3.6e6, HeldMs: 1.8e6, FirstViolation: &vs[0],
		ExclusionViolations: 5, FaultsFired: []checker.FiredFault{{Fault: 11, Rule: 1, Kind: "client-pause"},
			{Fault: 12, Rule: 2, Kind: "latency"}, {Fault: 13, Rule: 3, Kind: "partition"}}},
		Analysis: checker.Analysis{Violations: vs}}
	var r AlgorithmResult
	r.summarize(out, plan)
	if r.Incidents != 3 || r.Violations != 5 || r.FaultsFired != 3 || r.HeldShare != 0.5 {
		t.Errorf("incidents %d, violations %d, faults %d, held %.2f; want 3, 5, 3, 0.50", r.Incidents, r.Violations, r.FaultsFired, r.HeldShare)
	}
	if r.PerHour.Value != 3 || r.ByKind["late-release"] != 1 {
		t.Errorf("per hour %v, by kind %v: want 3 an hour, late-release named by the plan", r.PerHour, r.ByKind)
	}
	var causes []string
	for _, g := range r.Groups {
		causes = append(causes, fmt.Sprintf("%s/%s/%d/%d", g.Cause, g.Class, g.Incidents, g.Count))
	}
	want := []string{"client-pause/client/1/3", "late-release + partition/service/1/1", "no fault/client/1/1"}
	if !slices.Equal(causes, want) {
		t.Errorf("groups %v, want %v", causes, want)
	}
	if !slices.Equal(r.FirstRules, []int{1}) || !r.reproduces([]int{2}) || !r.reproduces([]int{2, 3}) || r.reproduces([]int{1, 2}) {
		t.Errorf("first rules %v, rule sets %v: want [1], and a replay of a first violation under 2, or 2 and 3, reproduced, under 1 and 2 not", r.FirstRules, r.RuleSets)
	}
}

// topos is the descriptors of the named topologies.
func topos(t *testing.T, names ...string) []cluster.Topology {
	t.Helper()
	out := make([]cluster.Topology, len(names))
	for i, n := range names {
		var err error
		if out[i], err = cluster.LookupTopology(n); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
