package cluster

import (
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster/internal/testkit"
)

func TestRedisSentinelFailover(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: RedisSentinel, Clients: 2, Proxies: true})
	ctx := ctxT(t, 40*time.Second)
	if got := len(c.Nodes()); got != 5 {
		t.Fatalf("want redis-1, redis-2 and 3 sentinels, have %+v", c.Nodes())
	}
	if m, err := c.Master(ctx); err != nil || m != "redis-1" {
		t.Fatalf("Master = %q, %v", m, err)
	}
	e := c.Endpoints(1)
	if e.MasterName == "" || len(e.SentinelAddrs) != 3 || e.Dial == nil {
		t.Fatalf("Endpoints = %+v", e)
	}
	fc := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: e.MasterName, SentinelAddrs: e.SentinelAddrs, Dialer: e.Dial,
		Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond,
	})
	defer fc.Close()
	if err := fc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET via Sentinel through the proxies: %v", err)
	}
	// The client's connection must go through client 1's proxy to redis-1, not straight to it.
	if link, err := c.Link(1, "redis-1"); err != nil {
		t.Fatal(err)
	} else {
		link.Stop()
		if err := fc.Ping(ctx).Err(); err == nil {
			t.Error("PING via FailoverClient succeeded with its proxy to the master disabled")
		}
		if err := link.Start(); err != nil {
			t.Fatal(err)
		}
	}
	staggeredDownAfter(t, c)
	repl, err := c.ReplicationLink()
	if err != nil || repl == nil {
		t.Fatalf("ReplicationLink = %v, %v", repl, err)
	}

	t0 := time.Now()
	if err := c.Kill(ctx, "redis-1"); err != nil {
		t.Fatal(err)
	}
	var m string
	for time.Since(t0) < 15*time.Second {
		if m, err = c.Master(ctx); err == nil && m == "redis-2" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if m != "redis-2" {
		t.Fatalf("15s after killing the master, Master = %q, %v", m, err)
	}
	t.Logf("failover took %v", time.Since(t0).Round(time.Millisecond))
	var v string
	for time.Since(t0) < 20*time.Second {
		if v, err = fc.Get(ctx, "k").Result(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v != "v" {
		t.Errorf("GET via Sentinel after failover = %q, %v (the write was replicated)", v, err)
	}
	if err := c.Restart(ctx, "redis-1"); err != nil {
		t.Errorf("Restart of the old master: %v", err)
	}
	// The servers' logs outlive the cluster's own files: both lives of the restarted master, the
	// replica's promotion, the leading sentinel's account of it.
	promotedBySome(t, savedLogs(t, c, map[string][]string{
		"redis-1": {"Ready to accept connections", "Ready to accept connections"},
		"redis-2": {"MASTER MODE enabled"},
	}))
}

// savedLogs is testkit.SavedLogs of c's nodes.
func savedLogs(t *testing.T, c *topo, want map[string][]string) map[string]string {
	t.Helper()
	return testkit.SavedLogs(t, c.SaveLogs, c.names(), want)
}

var promotedBySome = testkit.PromotedBySome

// staggeredDownAfter checks that the running sentinels find a dead master down at least a second
// apart, so that the first of them wins the election alone (sentinelDownAfter). With the same
// down-after for all three, 5 of 32 runs of token+fence × failover with four at once beside two
// CPU-bound loops had a split first election (every sentinel voted for itself; the logs say
// -failover-abort-not-elected) and a promotion 6 s late; staggered, 0 of 32.
func staggeredDownAfter(t *testing.T, c *topo) {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	var ms []int
	for _, s := range c.sents {
		v, err := redisDo(ctx, s.Addr, time.Second, "SENTINEL", "MASTER", sentinelMasterName)
		if err != nil {
			t.Fatalf("%s: SENTINEL MASTER: %v", s.Name, err)
		}
		fields, _ := v.([]string)
		d := -1
		for i := 0; i+1 < len(fields); i += 2 {
			if fields[i] == "down-after-milliseconds" {
				d, _ = strconv.Atoi(fields[i+1])
			}
		}
		ms = append(ms, d)
	}
	sort.Ints(ms)
	for i := 1; i < len(ms); i++ {
		if ms[0] < 0 || ms[i]-ms[i-1] < 1000 {
			t.Fatalf("the sentinels' down-after-milliseconds are %v: want each at least 1000 ms from the next, so one sentinel starts the failover alone", ms)
		}
	}
}
