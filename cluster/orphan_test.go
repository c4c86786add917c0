package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster/internal/testkit"
)

const helperEnv = "LOCKCHAOS_CLUSTER_HELPER"

// TestHelperProcess is not a test: TestNoOrphansAfterSIGKILL runs the test binary again with
// helperEnv set, and this starts a cluster in that child, reports READY and waits to be killed.
func TestHelperProcess(t *testing.T) {
	topology := os.Getenv(helperEnv)
	if topology == "" {
		t.Skip("helper for TestNoOrphansAfterSIGKILL")
	}
	c, err := Start(context.Background(), Spec{Topology: topology, Nodes: 1, Dir: os.Getenv(helperEnv + "_DIR")})
	if err != nil {
		fmt.Println("ERROR", strings.ReplaceAll(err.Error(), "\n", " | "))
		os.Exit(1)
	}
	fmt.Println("READY", c.(*topo).be.(*local).dir)
	time.Sleep(time.Minute)
	os.Exit(3) // never Close: the parent's SIGKILL must be enough
}

// TestNoOrphansAfterSIGKILL checks docs/design.md#quality-bars: no server survives a SIGKILL of the harness.
func TestNoOrphansAfterSIGKILL(t *testing.T) {
	for _, tc := range []struct {
		topology string
		procs    int
	}{{RedisSentinel, 5}, {ZooKeeper, 1}} {
		t.Run(tc.topology, func(t *testing.T) {
			t.Parallel()
			needServers(t, tc.topology)
			parent := t.TempDir()
			dir := testkit.KilledHelper(t, "TestHelperProcess", []string{helperEnv + "=" + tc.topology, helperEnv + "_DIR=" + parent}, 30*time.Second,
				func(dir string) {
					if got := procsMentioning(dir); len(got) != tc.procs {
						t.Fatalf("want %d server processes naming %s before the kill, have %v", tc.procs, dir, got)
					}
				})
			var left []int
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if left = procsMentioning(dir); len(left) == 0 {
					return
				}
			}
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("server processes survived SIGKILL of the harness: %v", left)
		})
	}
}
