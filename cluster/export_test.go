package cluster

import "testing"

// StartCluster is startCluster for the package's external tests (cluster_test), which share
// checks with other backends' packages through cluster/internal/clustertest.
func StartCluster(t *testing.T, spec Spec) Cluster { return startCluster(t, spec) }
