package external_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	toxiclient "github.com/lockchaos/lockchaos/third_party/toxiproxy/client"
	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/external"
	"github.com/lockchaos/lockchaos/cluster/internal/testkit"
	"github.com/lockchaos/lockchaos/internal/exttest"
)

// syncBuf is a log safe for the cluster's concurrent writes.
type syncBuf = testkit.SyncBuffer

// TestExternalRedis runs the external backend against a redis-server and a toxiproxy-server that
// lockchaos did not start: proxies on the remote server per client, faults through them, the
// restart command, and nothing left on the toxiproxy-server after Close.
func TestExternalRedis(t *testing.T) {
	r := exttest.StartRedis(t)
	tp := exttest.Toxiproxy(t)
	path := exttest.WriteClusterFile(t, t.TempDir(), exttest.Node{
		Name: "redis-1", Kind: "redis", Address: r.Addr, Toxiproxy: tp,
		Kill: r.Kill, Restart: r.Restart, Pause: r.Pause, Resume: r.Resume,
	})
	f, err := cluster.LoadExternal(path)
	if err != nil {
		t.Fatal(err)
	}
	// A proxy left by a killed run of this host (a pid that cannot be alive), one of another
	// host, and one that is not lockchaos's: only the first may go.
	stale := fmt.Sprintf("%s%s-99999999-abcdef-c1-redis-1", cluster.ProxyPrefix, strings.Split(external.NewRunID(), "-")[0])
	api := toxiclient.NewClient(tp)
	for _, name := range []string{stale, cluster.ProxyPrefix + "0badc0de-1-abcdef-c1-redis-1", "someone-elses"} {
		if _, err := api.CreateProxy(name, "127.0.0.1:0", r.Addr); err != nil {
			t.Fatal(err)
		}
	}
	// So does a lock key (no TTL, setnx's) of that killed run; the other host's stays.
	ctx := context.Background()
	direct := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer direct.Close()
	staleKey := strings.TrimSuffix(stale, "c1-redis-1") + "lock"
	otherHostKey := cluster.ProxyPrefix + "0badc0de-1-abcdef-lock"
	for _, k := range []string{staleKey, otherHostKey} {
		if err := direct.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var log syncBuf
	spec := cluster.Spec{Topology: cluster.RedisSingle, Backend: cluster.External, External: f, Clients: 2, Proxies: true, Log: &log,
		RunID: external.NewRunID()}
	c, err := cluster.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = c.Close()
		}
	}()
	logs := filepath.Join(t.TempDir(), "servers")
	if err := c.SaveLogs(logs); err != nil {
		t.Errorf("SaveLogs: %v", err)
	}
	if _, err := os.Stat(logs); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SaveLogs on the external backend made %s (%v): its servers' logs are their owner's", logs, err)
	}
	if !strings.Contains(log.String(), "removed 1 stale lockchaos proxies of killed runs from toxiproxy "+tp) {
		t.Errorf("log does not say the stale proxy was removed: %q", log.String())
	}
	if !strings.Contains(log.String(), "removed 1 stale lockchaos keys of killed runs from redis-1") {
		t.Errorf("log does not say the stale key was removed: %q", log.String())
	}
	if n, err := direct.Exists(ctx, staleKey, otherHostKey).Result(); err != nil || n != 1 {
		t.Errorf("%d of the stale key and the other host's key exist (%v), want only the other host's", n, err)
	}
	if err := direct.Del(ctx, otherHostKey).Err(); err != nil {
		t.Fatal(err)
	}
	if got := exttest.Proxies(t, tp, stale); len(got) != 0 {
		t.Errorf("stale proxy still there: %v", got)
	}
	if got := exttest.Proxies(t, tp, "someone-elses"); len(got) != 1 {
		t.Errorf("a proxy that is not lockchaos's was touched: %v", got)
	}
	mine := exttest.Proxies(t, tp, cluster.ProxyPrefix)
	if len(mine) != 2+1 { // one per client, plus the other host's
		t.Fatalf("proxies on the toxiproxy-server: %v, want one per client (and the other host's)", mine)
	}

	e1, e2 := c.Endpoints(1), c.Endpoints(2)
	if e1.Addrs[0] == r.Addr || e1.Addrs[0] == e2.Addrs[0] {
		t.Fatalf("client addresses %v, %v: want each its own proxy, not %s", e1.Addrs, e2.Addrs, r.Addr)
	}
	r1 := redis.NewClient(&redis.Options{Addr: e1.Addrs[0], MaxRetries: -1, ReadTimeout: 400 * time.Millisecond, DialTimeout: 400 * time.Millisecond})
	r2 := redis.NewClient(&redis.Options{Addr: e2.Addrs[0], MaxRetries: -1, ReadTimeout: 400 * time.Millisecond, DialTimeout: 400 * time.Millisecond})
	defer r1.Close()
	defer r2.Close()
	if err := r1.Set(ctx, "lockchaos-test-k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the remote proxy: %v", err)
	}

	t.Run("partition", func(t *testing.T) {
		l, err := c.FaultLink(1, "redis-1")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"upstream", "downstream"} {
			if err := l.AddToxic(ctx, "cut-"+s, "timeout", s, map[string]any{"timeout": 0}); err != nil {
				t.Fatal(err)
			}
		}
		if err := r1.Ping(ctx).Err(); err == nil {
			t.Errorf("PING through a partitioned link answered")
		}
		if err := r2.Ping(ctx).Err(); err != nil {
			t.Errorf("client 2 must not be cut with client 1: %v", err)
		}
		for _, s := range []string{"upstream", "downstream"} {
			if err := l.RemoveToxic(ctx, "cut-"+s); err != nil {
				t.Fatal(err)
			}
		}
		if err := r1.Ping(ctx).Err(); err != nil {
			t.Errorf("PING after the partition healed: %v", err)
		}
	})

	t.Run("refuse", func(t *testing.T) {
		l, _ := c.FaultLink(2, "redis-1")
		if err := l.SetEnabled(ctx, false); err != nil {
			t.Fatal(err)
		}
		if err := r2.Ping(ctx).Err(); err == nil {
			t.Errorf("PING through a disabled proxy answered")
		}
		if err := l.SetEnabled(ctx, true); err != nil {
			t.Fatal(err)
		}
		if err := r2.Ping(ctx).Err(); err != nil {
			t.Errorf("PING after re-enabling (same address): %v", err)
		}
	})

	t.Run("restart command", func(t *testing.T) {
		if err := c.Restart(ctx, "redis-1"); err != nil {
			t.Fatal(err)
		}
		n, err := r1.Exists(ctx, "lockchaos-test-k").Result()
		if err != nil || n != 0 {
			t.Errorf("after the restart command the key exists=%d (%v), want an empty server", n, err)
		}
	})

	t.Run("pause command", func(t *testing.T) {
		if err := c.Pause(ctx, "redis-1"); err != nil {
			t.Fatal(err)
		}
		err := r2.Ping(ctx).Err()
		if rerr := c.Resume(ctx, "redis-1"); rerr != nil {
			t.Fatal(rerr)
		}
		if err == nil {
			t.Errorf("PING to a paused server answered")
		}
		if err := r2.Ping(ctx).Err(); err != nil {
			t.Errorf("PING after resume: %v", err)
		}
	})

	if _, err := c.FaultReplicationLink(); !errors.Is(err, cluster.ErrBadSpec) {
		t.Errorf("FaultReplicationLink on external: %v, want ErrBadSpec", err)
	}
	// The run's own keys go at Close (a setnx lock has no TTL to free it); others' stay.
	own := cluster.ProxyPrefix + spec.RunID + "-lock"
	for _, k := range []string{own, own + ":fence", "lockchaos-someone-else", "other"} {
		if err := r1.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	closed = true
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := exttest.Proxies(t, tp, cluster.ProxyPrefix); len(got) != 1 {
		t.Errorf("after Close the toxiproxy-server still has %v, want only the other host's proxy", got)
	}
	if err := direct.Ping(ctx).Err(); err != nil {
		t.Errorf("Close must leave someone else's server running: %v", err)
	}
	if keys, err := direct.Keys(ctx, "*").Result(); err != nil || len(keys) != 2 || keys[0] == own || keys[1] == own {
		t.Errorf("keys after Close: %v (%v), want only the two that are not the run's", keys, err)
	}
}

// TestExternalBadCommand: a failing command's error carries its output.
func TestExternalBadCommand(t *testing.T) {
	r := exttest.StartRedis(t)
	path := exttest.WriteClusterFile(t, t.TempDir(), exttest.Node{
		Name: "redis-1", Kind: "redis", Address: r.Addr, Kill: "echo no such host >&2; exit 3",
	})
	f, err := cluster.LoadExternal(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(context.Background(), cluster.Spec{Topology: cluster.RedisSingle, Backend: cluster.External, External: f})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Kill(context.Background(), "redis-1")
	if err == nil || !strings.Contains(err.Error(), "no such host") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Kill with a failing command: %v, want its output and status", err)
	}
	if err := c.Restart(context.Background(), "redis-1"); !errors.Is(err, cluster.ErrBadSpec) {
		t.Errorf("Restart without a restart command: %v, want ErrBadSpec", err)
	}
}

// TestExternalUnreachable: an unreachable node or toxiproxy API is bad input, and nothing is
// created.
func TestExternalUnreachable(t *testing.T) {
	r := exttest.StartRedis(t)
	dead := fmt.Sprintf("127.0.0.1:%d", exttest.FreePort(t))
	for _, n := range []exttest.Node{
		{Name: "redis-1", Kind: "redis", Address: dead},
		{Name: "redis-1", Kind: "redis", Address: r.Addr, Toxiproxy: dead},
	} {
		f, err := cluster.LoadExternal(exttest.WriteClusterFile(t, t.TempDir(), n))
		if err != nil {
			t.Fatal(err)
		}
		_, err = cluster.Start(context.Background(), cluster.Spec{Topology: cluster.RedisSingle, Backend: cluster.External, External: f})
		if !errors.Is(err, cluster.ErrBadSpec) || !strings.Contains(err.Error(), dead) || !strings.Contains(err.Error(), "unreachable") {
			t.Errorf("Start with %s unreachable: %v, want ErrBadSpec naming it", dead, err)
		}
	}
}

// TestExternalCloseBringsBack: a node the run killed (or paused) is someone else's server: Close
// restarts (resumes) it, or says it is still down when the file has no restart command.
func TestExternalCloseBringsBack(t *testing.T) {
	ctx := context.Background()
	for _, withRestart := range []bool{true, false} {
		r := exttest.StartRedis(t)
		n := exttest.Node{Name: "redis-1", Kind: "redis", Address: r.Addr, Kill: r.Kill}
		if withRestart {
			n.Restart = r.Restart
		}
		f, err := cluster.LoadExternal(exttest.WriteClusterFile(t, t.TempDir(), n))
		if err != nil {
			t.Fatal(err)
		}
		c, err := cluster.Start(ctx, cluster.Spec{Topology: cluster.RedisSingle, Backend: cluster.External, External: f})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Kill(ctx, "redis-1"); err != nil {
			t.Fatal(err)
		}
		direct := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
		if err := direct.Ping(ctx).Err(); err == nil {
			t.Fatalf("PING answered after the kill command")
		}
		err = c.Close()
		if !withRestart {
			if err == nil || !strings.Contains(err.Error(), "node redis-1 was killed by the run and is still down (add restart:") {
				t.Errorf("Close without a restart command: %v, want it to say the node is down", err)
			}
			direct.Close()
			continue
		}
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for direct.Ping(ctx).Err() != nil {
			if time.Now().After(deadline) {
				t.Fatalf("the killed node is not back 10s after Close")
			}
			time.Sleep(50 * time.Millisecond)
		}
		direct.Close()
	}
}
