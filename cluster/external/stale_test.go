package external

import (
	"testing"

	"github.com/lockchaos/lockchaos/cluster"
)

func TestStaleRun(t *testing.T) {
	me := NewRunID()
	if staleRun(cluster.ProxyPrefix + me + "-c1-redis-1") {
		t.Errorf("this process's own proxy %s counted as stale", me)
	}
	// A pid that cannot be alive: above the kernel's pid_max.
	dead := hostHash() + "-99999999-abcdef"
	if !staleRun(cluster.ProxyPrefix + dead + "-c1-redis-1") {
		t.Errorf("a dead run's proxy on this host not counted as stale")
	}
	for _, name := range []string{
		cluster.ProxyPrefix + "00000000-99999999-abcdef-c1-redis-1", // another host: unknown liveness
		"redis-proxy",                  // not ours
		cluster.ProxyPrefix + "c1-x-1", // not our naming
	} {
		if staleRun(name) {
			t.Errorf("%s counted as stale", name)
		}
	}
}
