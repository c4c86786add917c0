package scenarios

import (
	"testing"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
)

// TestEveryRoadAgrees: for every topology × fault kind, a cell of a one-fault scenario is n/a
// exactly where the fault kind says it cannot act (faults.Unavailable), and says the kind's
// reason — for a registered built-in, for a user's lock handed down as a value (locktest's road)
// and for a process client (its Info marks it so): the roads ask one owner. And every topology an
// algorithm names is one cluster registers.
func TestEveryRoadAgrees(t *testing.T) {
	for _, top := range cluster.AllTopologies() {
		for _, kind := range faults.KindNames() {
			f := faults.Spec{Kind: kind, Point: "cs:acquired", For: fixed(100), Amount: fixed(100), Nodes: "master"}
			s := Scenario{Name: "probe-" + kind, Summary: "probe", Faults: []faults.Spec{f}}
			want := faults.Unavailable(f, top)
			for _, lock := range []algorithms.Info{
				{Name: "user-lock", Topologies: []string{top.Name}},
				{Name: "process-client", Topologies: []string{top.Name}, Process: true},
			} {
				c, err := s.CellFor(lock, "")
				if err != nil {
					t.Fatalf("%s × %s × %s: %v", lock.Name, top.Name, kind, err)
				}
				if (c.NA != "") != (want != "") || (want != "" && c.NA != want) {
					t.Errorf("%s on %s × %s: n/a %q, the fault kind says %q", lock.Name, top.Name, kind, c.NA, want)
				}
			}
		}
	}
	for _, info := range append(algorithms.All(), algorithms.Mutants()...) {
		for _, name := range info.Topologies {
			if _, err := cluster.LookupTopology(name); err != nil {
				t.Errorf("%s runs on %s: %v", info.Name, name, err)
			}
		}
	}
	for _, top := range cluster.AllTopologies() {
		if _, err := algorithms.Reference(top.Name); err != nil {
			t.Errorf("%s: %v (mark one algorithm ReferenceOn it)", top.Name, err)
		}
	}
}

// TestWireRefinementLeftOut: the catalogue's client-crash aims first at the wire, which only Redis's
// and ZooKeeper's links show: a lock on a topology whose links are not parsed (etcd, SQL) runs the
// cell with its crash at cs:acquired alone, not n/a and not waiting for a reply it never sees.
func TestWireRefinementLeftOut(t *testing.T) {
	for _, top := range cluster.AllTopologies() {
		c, err := must("client-crash").CellFor(algorithms.Info{Name: "mine", Topologies: []string{top.Name}}, "")
		if err != nil {
			t.Fatal(err)
		}
		wire := 0
		for _, f := range c.Faults {
			if f.Wire != nil {
				wire++
			}
		}
		if c.NA != "" || (wire > 0) != (top.Wire != "") || len(c.Faults)-wire != 1 {
			t.Errorf("a lock on %s (wire %q) × client-crash: n/a %q, faults %+v", top.Name, top.Wire, c.NA, c.Faults)
		}
	}
}

// TestOwnTopologyVariants: a lock whose first topology is redis-cluster (a process client's
// manifest, a user's lock) takes the "@redis-cluster" variants there, as a built-in run there with
// --topology does: node-kill's longer stuck limit.
func TestOwnTopologyVariants(t *testing.T) {
	mine, err := must("node-kill").CellFor(algorithms.Info{Name: "mine", Topologies: []string{"redis-cluster"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	token, err := must("node-kill").CellOn("token", "redis-cluster")
	if err != nil {
		t.Fatal(err)
	}
	if mine.Workload.StuckAfter != token.Workload.StuckAfter || mine.Workload.Duration != token.Workload.Duration {
		t.Errorf("a lock of redis-cluster's own × node-kill: workload %+v, token there %+v", mine.Workload, token.Workload)
	}
}

// TestUnreachedIsTheLocks: a fault kind the lock says cannot reach it (client-go's clock) makes
// the cell n/a with the lock's reason, on every road.
func TestUnreachedIsTheLocks(t *testing.T) {
	lock := algorithms.Info{Name: "mine", Topologies: []string{"redis-single"}, Unreached: map[string]string{"clock-skew": "its clock is its own"}}
	c, err := must("clock-skew").CellFor(lock, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.NA != "clock-skew cannot reach the lock: its clock is its own" {
		t.Errorf("clock-skew of a lock whose clock cannot be moved: n/a %q", c.NA)
	}
	k8s, err := algorithms.Lookup("k8s-leaderelection")
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := must("clock-skew").CellFor(k8s, ""); c.NA == "" {
		t.Error("k8s-leaderelection × clock-skew runs: client-go's clock cannot be moved")
	}
}
