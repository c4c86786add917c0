package explore

import (
	"testing"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
)

// TestNAAsksTheFaultKind: on every topology, explore finds a kind n/a exactly where the fault kind
// says it cannot act there (it ran no restart on etcd, which the catalogue runs, and skipped SQL
// by a list of names).
func TestNAAsksTheFaultKind(t *testing.T) {
	for _, top := range cluster.AllTopologies() {
		s := newSetup(algorithms.Info{Name: "mine", Topologies: []string{top.Name}}, Options{TTL: 500e6})
		for _, kind := range Kinds {
			if kind == KindFailover {
				continue // on a topology of the lock's with a replica, not necessarily this one
			}
			want := faults.Unavailable(faults.Spec{Kind: kind, Nodes: s.holder()}, top)
			if got := s.na(kind); got != want {
				t.Errorf("%s × %s: explore says %q, the fault kind %q", top.Name, kind, got, want)
			}
		}
	}
	s := newSetup(algorithms.Info{Name: "mine", Topologies: []string{"redis-single", "redis-sentinel"}}, Options{TTL: 500e6})
	if s.na(KindFailover) != "" || s.replicated != "redis-sentinel" {
		t.Errorf("a lock on redis-single and redis-sentinel: failover n/a %q, on %q", s.na(KindFailover), s.replicated)
	}
	s = newSetup(algorithms.Info{Name: "mine", Topologies: []string{"etcd"}}, Options{TTL: 500e6})
	if s.na(KindRestart) != "" || s.na(KindFailover) == "" {
		t.Errorf("etcd: restart n/a %q (want it run), failover n/a %q (want n/a)", s.na(KindRestart), s.na(KindFailover))
	}
}
