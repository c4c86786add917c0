package cluster_test

import (
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/internal/clustertest"
)

// TestPostgresStandby runs clustertest.Standby on the local backend (cluster/docker runs it on
// docker): a standby's data dir is a base backup of the primary's.
func TestPostgresStandby(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	c := cluster.StartCluster(t, cluster.Spec{Topology: cluster.PostgresStandby, Clients: 2, Proxies: true})
	if d := time.Since(t0); d > 3*time.Second {
		t.Logf("postgres-standby took %v to start (the budget is 3 s; a loaded machine?)", d)
	}
	clustertest.Standby(t, c)
}
