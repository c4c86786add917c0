package faults_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/internal/servertest"
	"github.com/redis/go-redis/v9"
)

// TestKill shows that a kill leaves the node gone (commands fail, directly and through the proxy),
// and that its end line is written at once: a kill is not healed.
func TestKill(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 1, Proxies: true})
	env := &testEnv{c: c, clients: 1}
	ctx := ctxT(t, 30*time.Second)
	direct := rclient(t, nodeAddr(t, c, "redis-1"), time.Second)
	if err := direct.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	_, rec := startNemesis(t, env, []faults.Spec{{Kind: "kill", Nodes: "redis-1"}}, 1)
	rec.waitEnd(t, "kill", 10*time.Second)
	checkLines(t, rec, "kill", "redis-1")
	if err := direct.Ping(ctx).Err(); err == nil {
		t.Error("PING to the killed node answered")
	}
	if err := rclient(t, proxied(t, c, 1, 0), time.Second).Ping(ctx).Err(); err == nil {
		t.Error("PING through the proxy to the killed node answered")
	}
}

// TestRestart shows that a restart brings the node back empty, at once (For 0) or after being down
// for For, during which it does not answer.
func TestRestart(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 1, Proxies: true})
	env := &testEnv{c: c, clients: 1}
	ctx := ctxT(t, 30*time.Second)

	for _, down := range []time.Duration{0, 600 * time.Millisecond} {
		t.Run("for="+down.String(), func(t *testing.T) {
			direct := rclient(t, nodeAddr(t, c, "redis-1"), 300*time.Millisecond)
			if err := direct.Set(ctx, "k", "before", 0).Err(); err != nil {
				t.Fatal(err)
			}
			_, rec := startNemesis(t, env, []faults.Spec{{Kind: "restart", Nodes: "redis-1", For: sz(down)}}, 1)
			if down > 0 {
				st := rec.waitStart(t, "restart", 10*time.Second)
				at := time.Duration(rec.now() - st.Start)
				if err := direct.Ping(ctx).Err(); err == nil && at < down {
					t.Errorf("PING %v after the start of a %v restart answered: the node should be down", at, down)
				}
			}
			s := rec.waitEnd(t, "restart", 15*time.Second)
			checkLines(t, rec, "restart", "redis-1")
			if got := time.Duration(s.End - s.Start); got < down*9/10 {
				t.Errorf("down for %v, want about %v", got, down)
			}
			fresh := rclient(t, nodeAddr(t, c, "redis-1"), 2*time.Second)
			if err := fresh.Ping(ctx).Err(); err != nil {
				t.Fatalf("PING after restart: %v", err)
			}
			if v, err := fresh.Get(ctx, "k").Result(); !errors.Is(err, redis.Nil) {
				t.Errorf("GET k after restart = %q, %v; want the key lost (no persistence)", v, err)
			}
		})
	}
}

// TestPauseServer shows that pause-server makes the node hang (a PING times out) until heal, after
// which it answers and still has its data (a pause is not a crash).
func TestPauseServer(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 1, Proxies: true})
	env := &testEnv{c: c, clients: 1}
	ctx := ctxT(t, 30*time.Second)
	rc := rclient(t, proxied(t, c, 1, 0), 400*time.Millisecond)
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	n, rec := startNemesis(t, env, []faults.Spec{{Kind: "pause-server", Nodes: "redis-1"}}, 1)
	rec.waitStart(t, "pause-server", 5*time.Second)
	if err := rc.Ping(ctx).Err(); !isTimeout(err) {
		t.Errorf("PING to the paused node: %v, want a timeout", err)
	}
	n.HealAll()
	checkLines(t, rec, "pause-server", "redis-1")
	if v, err := rc.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("GET after resume = %q, %v", v, err)
	}
}

// TestClockJump shows the emulated server clock jump: a key's TTL drops by the jump, a key whose
// TTL is within the jump expires, and a key without TTL is untouched.
func TestClockJump(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 1, Proxies: true})
	env := &testEnv{c: c, clients: 1}
	ctx := ctxT(t, 30*time.Second)
	const jump = 3 * time.Second
	rc := rclient(t, nodeAddr(t, c, "redis-1"), 2*time.Second)
	for _, kv := range []struct {
		k   string
		ttl time.Duration
	}{{"long", 10 * time.Second}, {"short", 2 * time.Second}, {"edge", jump}, {"forever", 0}} {
		if err := rc.Set(ctx, kv.k, "v", kv.ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := rc.PTTL(ctx, "long").Result()

	n, rec := newNemesis(t, env, []faults.Spec{{Kind: "clock-jump", Point: "jump", Nodes: "master", Amount: sz(jump)}}, 1)
	if err := n.Point(ctx, 1, "jump"); err != nil {
		t.Fatalf("Point: %v", err)
	}
	checkLines(t, rec, "clock-jump", "redis-1")

	after, err := rc.PTTL(ctx, "long").Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PTTL of the 10s key: %v before, %v after a jump of %v", before, after, jump)
	if drop := before - after; drop < jump || drop > jump+time.Second {
		t.Errorf("PTTL dropped by %v, want about %v", drop, jump)
	}
	for _, k := range []string{"short", "edge"} {
		if n, err := rc.Exists(ctx, k).Result(); err != nil || n != 0 {
			t.Errorf("key %s with PTTL ≤ the jump still exists (%d, %v)", k, n, err)
		}
	}
	if d, err := rc.PTTL(ctx, "forever").Result(); err != nil || d != -1 {
		t.Errorf("key without TTL: PTTL = %v, %v, want -1 (no TTL, untouched)", d, err)
	}
}

// TestKillLeaderOnZooKeeper resolves the "leader" selector on a real 3-member ensemble when the
// fault fires: the kill's line names the leader of that moment, and the other two elect a new one.
func TestKillLeaderOnZooKeeper(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.ZooKeeper, Nodes: 3, Clients: 1, Proxies: true})
	env := &testEnv{c: c, clients: 1}
	ctx := ctxT(t, 40*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, rec := newNemesis(t, env, []faults.Spec{{Kind: "kill", Point: "cs:acquired", Nodes: "leader"}}, 1)
	if err := n.Point(ctx, 1, "cs:acquired"); err != nil {
		t.Fatal(err)
	}
	checkLines(t, rec, "kill", leader)
	t0 := time.Now()
	var now string
	for time.Since(t0) < 20*time.Second {
		if now, err = c.Leader(ctx); err == nil && now != leader {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if now == leader || now == "" {
		t.Fatalf("%v after killing leader %s, Leader = %q, %v", time.Since(t0).Round(time.Millisecond), leader, now, err)
	}
	t.Logf("killed leader %s; %s leads %v later", leader, now, time.Since(t0).Round(time.Millisecond))
}
