package cluster

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestStartRejectsBadSpecs(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Topology: "memcached"}, "unknown topology"},
		{Spec{Topology: ZooKeeper, Nodes: 2}, "odd number"},
		{Spec{Topology: RedisMulti, Nodes: -1}, "nodes is -1"},
		{Spec{Topology: RedisSingle, Clients: -2}, "clients is -2"},
		{Spec{Topology: RedisSingle, Backend: "podman"}, "backend"},
		{Spec{Topology: RedisSingle, Dir: "/nonexistent/lockchaos"}, "not a directory"},
	} {
		_, err := Start(context.Background(), tc.spec)
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want ErrBadSpec mentioning %q", tc.spec, err, tc.want)
		}
	}
}

// Not parallel: it swaps a package variable.
func TestStartMissingBinary(t *testing.T) {
	old := redisServerBin
	redisServerBin = "redis-server-not-installed"
	defer func() { redisServerBin = old }()
	dir := t.TempDir()
	_, err := Start(context.Background(), Spec{Topology: RedisSingle, Dir: dir})
	if !errors.Is(err, ErrMissingBinary) || !strings.Contains(err.Error(), "not found in PATH") ||
		!strings.Contains(err.Error(), "apt-get install redis-server") {
		t.Fatalf("Start = %v, want ErrMissingBinary naming the fix", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a failed Start left %d entries in %s", len(ents), dir)
	}
}

// Not parallel: it swaps a package variable. The redis servers start, the sentinels do not: the
// failed Start must kill the servers it started and remove the run dir.
func TestFailedStartLeavesNothing(t *testing.T) {
	needServers(t, RedisSentinel)
	old := redisSentinelBin
	redisSentinelBin = "false"
	defer func() { redisSentinelBin = old }()
	dir := t.TempDir()
	_, err := Start(context.Background(), Spec{Topology: RedisSentinel, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "sentinel-1") || !strings.Contains(err.Error(), "did not start") {
		t.Fatalf("Start = %v, want sentinel-1 did not start", err)
	}
	if testing.Verbose() {
		t.Log(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a failed Start left %d entries in %s", len(ents), dir)
	}
	if pids := procsMentioning(dir); len(pids) != 0 {
		t.Errorf("a failed Start left processes: %v", pids)
	}
}
