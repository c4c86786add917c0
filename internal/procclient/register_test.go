package procclient

import (
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestShippedManifests: every shipped manifest loads and registers; its expectations reach the
// catalogue's cells, and a ZooKeeper client gets the zookeeper family's variants (the longer pause).
func TestShippedManifests(t *testing.T) {
	if err := RegisterDir("../../clients"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"redis-py", "kazoo", "kazoo-bare", "curator", "curator-bare", "python-etcd3"} {
		if _, err := algorithms.Lookup(name); err != nil {
			t.Errorf("%s not registered: %v", name, err)
		}
	}
	pause, err := scenarios.Lookup("client-pause")
	if err != nil {
		t.Fatal(err)
	}
	for alg, want := range map[string]time.Duration{"kazoo": 2 * time.Second, "curator": 2 * time.Second, "redis-py": 900 * time.Millisecond} {
		c, err := pause.Cell(alg)
		if err != nil {
			t.Fatal(err)
		}
		if c.Expected != "unsafe-client" {
			t.Errorf("%s × client-pause expects %q, want unsafe-client (from its manifest)", alg, c.Expected)
		}
		if len(c.Faults) != 1 || c.Faults[0].For.D() != want {
			t.Errorf("%s × client-pause faults %+v, want one pause of %v", alg, c.Faults, want)
		}
	}
	if err := RegisterDir("../../clients"); err != nil {
		t.Errorf("registering the same manifests twice: %v, want a no-op", err)
	}
}
