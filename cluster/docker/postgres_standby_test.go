package docker

import (
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/internal/clustertest"
)

// TestPostgresStandby runs clustertest.Standby on the docker backend (cluster's own test runs it
// on local): a container's standby starts from its image's own copy of the primary's data dir,
// not from a base backup, and a promoted one restarts as the primary.
func TestPostgresStandby(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	c := startDockerCluster(t, cluster.Spec{Topology: cluster.PostgresStandby, Clients: 2, Proxies: true})
	if d := time.Since(t0); d > 3*time.Second {
		t.Logf("postgres-standby took %v to start (the budget is 3 s; a loaded machine?)", d)
	}
	clustertest.Standby(t, c.Cluster)
}
