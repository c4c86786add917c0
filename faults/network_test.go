package faults_test

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
)

// TestLatency measures the fault where it acts: PINGs through client 1's proxy get slower by about
// the amount while it lasts (client 2's do not), and are fast again after heal. Not parallel: it
// measures time.
func TestLatency(t *testing.T) {
	c := startCluster(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 2, Proxies: true})
	env := &testEnv{c: c, clients: 2}
	ctx := ctxT(t, 30*time.Second)
	const amount = 150 * time.Millisecond
	rc1 := rclient(t, proxied(t, c, 1, 0), 2*time.Second)
	rc2 := rclient(t, proxied(t, c, 2, 0), 2*time.Second)
	base := pingP50(t, ctx, rc1, 5)

	n, rec := startNemesis(t, env, []faults.Spec{{Kind: "latency", Clients: "1", Nodes: "redis-1", Amount: ms(amount)}}, 1)
	rec.waitStart(t, "latency", 5*time.Second)
	slow := pingP50(t, ctx, rc1, 5)
	other := pingP50(t, ctx, rc2, 5)
	n.HealAll()
	healed := pingP50(t, ctx, rc1, 5)
	t.Logf("PING p50 through client 1's proxy: %v before, %v with latency %v, %v after heal; client 2 meanwhile %v",
		base, slow, amount, healed, other)

	if rise := slow - base; rise < amount*8/10 || rise > amount+300*time.Millisecond {
		t.Errorf("p50 rose by %v with latency %v (want about the amount)", rise, amount)
	}
	if other >= amount*8/10 {
		t.Errorf("client 2's p50 is %v: the latency hit a link it does not target", other)
	}
	if healed >= amount*8/10 {
		t.Errorf("p50 after heal is %v: the latency was not removed", healed)
	}
	s := checkLines(t, rec, "latency", "client-1 → redis-1")
	if s.Detail == "" {
		t.Error("latency start line has no detail")
	}
}

// TestPartition shows that a partition black-holes the targeted client's link (a command hangs
// until its timeout, and never reaches the server), that partition-oneway cuts only the stream it
// is given, and that heal restores the same link.
func TestPartition(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 2, Proxies: true})
	env := &testEnv{c: c, clients: 2}
	ctx := ctxT(t, 40*time.Second)
	direct := rclient(t, nodeAddr(t, c, "redis-1"), 2*time.Second)
	rc1 := rclient(t, proxied(t, c, 1, 0), 400*time.Millisecond)
	rc2 := rclient(t, proxied(t, c, 2, 0), 2*time.Second)

	for _, tc := range []struct {
		kind, stream string
		reaches      bool // whether the SET still reaches the server
	}{
		{"partition", "", false},
		{"partition-oneway", "", false}, // upstream by default
		{"partition-oneway", "downstream", true},
	} {
		t.Run(tc.kind+"/"+tc.stream, func(t *testing.T) {
			key := "k-" + tc.kind + "-" + tc.stream
			n, rec := startNemesis(t, env, []faults.Spec{{Kind: tc.kind, Clients: "1", Nodes: "redis-1", Stream: tc.stream}}, 1)
			rec.waitStart(t, tc.kind, 5*time.Second)

			t0 := time.Now()
			err := rc1.Set(ctx, key, "v", 0).Err()
			if !isTimeout(err) {
				t.Errorf("SET through client 1's cut link: %v after %v, want a timeout", err, time.Since(t0))
			}
			if err := rc2.Ping(ctx).Err(); err != nil {
				t.Errorf("client 2 is not partitioned, but PING: %v", err)
			}
			var got string
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if got, err = direct.Get(ctx, key).Result(); err == nil {
					break
				}
			}
			if reached := got == "v"; reached != tc.reaches {
				t.Errorf("SET reached the server: %v (GET %q, %v), want %v", reached, got, err, tc.reaches)
			}

			n.HealAll()
			checkLines(t, rec, tc.kind, "client-1 → redis-1")
			if err := rc1.Set(ctx, key, "after", 0).Err(); err != nil {
				t.Fatalf("SET through client 1's link after heal: %v", err)
			}
			if got, err := direct.Get(ctx, key).Result(); got != "after" {
				t.Errorf("after heal the server has %q, %v", got, err)
			}
		})
	}
}

// TestRefuse shows that refuse makes the client's proxy refuse connections at once, and heal
// brings it back on the same address.
func TestRefuse(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 2, Proxies: true})
	env := &testEnv{c: c, clients: 2}
	ctx := ctxT(t, 30*time.Second)
	addr := proxied(t, c, 1, 0)
	rc1 := rclient(t, addr, 2*time.Second)
	rc2 := rclient(t, proxied(t, c, 2, 0), 2*time.Second)
	if err := rc1.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	n, rec := startNemesis(t, env, []faults.Spec{{Kind: "refuse", Clients: "1", Nodes: "redis-1"}}, 1)
	rec.waitStart(t, "refuse", 5*time.Second)
	t0 := time.Now()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		conn.Close()
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %s while refused: %v, want connection refused", addr, err)
	} else if d := time.Since(t0); d > time.Second {
		t.Errorf("refusal took %v: it should fail fast", d)
	}
	if err := rc1.Ping(ctx).Err(); err == nil {
		t.Error("PING through the refused link succeeded (old connection not closed)")
	}
	if err := rc2.Ping(ctx).Err(); err != nil {
		t.Errorf("client 2 is not refused, but PING: %v", err)
	}

	n.HealAll()
	checkLines(t, rec, "refuse", "client-1 → redis-1")
	if got := proxied(t, c, 1, 0); got != addr {
		t.Errorf("client 1's address changed from %s to %s", addr, got)
	}
	// A fresh client: go-redis's pool keeps returning its last dial error for a while after
	// refused dials, which would measure go-redis, not the link.
	after := rclient(t, addr, 2*time.Second)
	if v, err := after.Set(ctx, "k", "v", 0).Result(); err != nil || v != "OK" {
		t.Errorf("SET on %s after heal: %q, %v", addr, v, err)
	}
}
