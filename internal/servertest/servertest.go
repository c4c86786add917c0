// Package servertest starts real clusters for the tests of the packages above cluster (algorithms,
// faults, harness): one helper, so every server-backed test skips under -short and on a missing
// server alike, and fails alike when CI requires the servers (internal/testenv).
package servertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// Start starts spec (in a temporary directory unless spec.Dir is set) and closes it when the test
// ends, failing the test if Close fails. Under -short it skips; a missing server binary skips too,
// unless LOCKCHAOS_REQUIRE_SERVERS=1, where it fails.
func Start(t testing.TB, spec cluster.Spec) cluster.Cluster {
	t.Helper()
	testenv.Servers(t)
	if spec.Dir == "" {
		spec.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	c, err := cluster.Start(ctx, spec)
	if errors.Is(err, cluster.ErrMissingBinary) {
		testenv.MissingServer(t, err)
	}
	if err != nil {
		t.Fatalf("cluster.Start(%s): %v", spec.Topology, err)
	}
	t.Logf("%s started in %v", spec.Topology, time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("cluster Close: %v", err)
		}
	})
	return c
}
