package faults_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/servertest"
	"github.com/redis/go-redis/v9"
)

// TestFailover runs the failover fault on a real redis-sentinel: armed at Start, a write on the
// master does not reach the replica; fired, the master dies and Sentinel promotes the replica,
// which does not have the write — the lost lock of the seed articles.
func TestFailover(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSentinel, Clients: 1, Proxies: true})
	env := &testEnv{c: c, clients: 1}
	ctx := ctxT(t, 45*time.Second)
	if m, err := c.Master(ctx); err != nil || m != "redis-1" {
		t.Fatalf("Master before = %q, %v", m, err)
	}
	master := rclient(t, nodeAddr(t, c, "redis-1"), time.Second)
	replica := rclient(t, nodeAddr(t, c, "redis-2"), time.Second)
	if err := master.Set(ctx, "replicated", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitKey(t, replica, "replicated", 5*time.Second) // replication works before the fault

	n, rec := startNemesis(t, env, []faults.Spec{{Kind: "failover", Point: "cs:acquired"}}, 1)
	arm, ok := rec.span("failover:arm")
	if !ok || arm.Error != "" || arm.End != history.Never {
		t.Fatalf("after Start the arm line is %+v (found %v); want started without error, not ended", arm, ok)
	}
	if err := master.Set(ctx, "lock", "client-1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if v, err := replica.Get(ctx, "lock").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("the replica has the lock key (%q, %v) although replication is cut", v, err)
	}

	t0 := time.Now()
	if err := n.Point(ctx, 1, "cs:acquired"); err != nil {
		t.Fatalf("Point: %v", err)
	}
	s := rec.waitEnd(t, "failover", 5*time.Second)
	if s.Error != "" || s.Point != "cs:acquired" || s.Detail == "" {
		t.Errorf("failover line = %+v", s)
	}
	if err := master.Ping(ctx).Err(); err == nil {
		t.Error("the old master still answers after the failover fired")
	}
	var m string
	var err error
	for time.Since(t0) < 20*time.Second {
		if m, err = c.Master(ctx); err == nil && m == "redis-2" {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if m != "redis-2" {
		t.Fatalf("%v after the failover fired, Master = %q, %v; want redis-2", time.Since(t0).Round(time.Millisecond), m, err)
	}
	t.Logf("Sentinel promoted redis-2 %v after the fault fired", time.Since(t0).Round(time.Millisecond))
	if v, err := replica.Get(ctx, "lock").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("the promoted replica has the lock key (%q, %v)", v, err)
	}
	if v, err := replica.Get(ctx, "replicated").Result(); err != nil || v != "v" {
		t.Errorf("the promoted replica lost the write made before the cut: %q, %v", v, err)
	}

	n.HealAll()
	checkLines(t, rec, "failover:arm", "")
	checkLines(t, rec, "failover", "")
}

func waitKey(t *testing.T, rc *redis.Client, key string, within time.Duration) {
	t.Helper()
	ctx := ctxT(t, within+time.Second)
	deadline := time.Now().Add(within)
	for {
		err := rc.Get(ctx, key).Err()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %s did not appear within %v: %v", key, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
