package cluster

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster/internal/testkit"
)

func TestRedisSingleFaults(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: RedisSingle, Clients: 2, Proxies: true})
	ctx := ctxT(t, 30*time.Second)
	nodes := c.Nodes()
	if len(nodes) != 1 || nodes[0].Name != "redis-1" || nodes[0].Kind != KindRedis {
		t.Fatalf("Nodes() = %+v", nodes)
	}
	e1, e2 := c.Endpoints(1), c.Endpoints(2)
	if e1.Dial == nil {
		t.Fatalf("Endpoints(1) has no Dial: %+v", e1)
	}
	r1, r2 := testkit.OwnProxies(t, ctx, nodes[0].Addr, e1.Addrs[0], e2.Addrs[0])
	if m, err := c.Master(ctx); err != nil || m != "redis-1" {
		t.Fatalf("Master = %q, %v", m, err)
	}

	t.Run("latency", func(t *testing.T) {
		link, err := c.Link(1, "redis-1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := link.Toxics.AddToxicJson(strings.NewReader(
			`{"name":"lat","type":"latency","stream":"downstream","attributes":{"latency":150}}`)); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := r1.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d < 140*time.Millisecond {
			t.Errorf("PING with 150ms latency took %v", d)
		}
		t0 = time.Now()
		if err := r2.Ping(ctx).Err(); err != nil || time.Since(t0) > 100*time.Millisecond {
			t.Errorf("client 2 must not see client 1's latency: %v after %v", err, time.Since(t0))
		}
		if err := link.Toxics.RemoveToxic(ctx, "lat"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("refuse", func(t *testing.T) {
		link, _ := c.Link(1, "redis-1")
		link.Stop()
		r := redisClient(t, e1.Addrs[0], 300*time.Millisecond)
		if err := r.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("PING through a disabled proxy: %v, want connection refused", err)
		}
		if err := link.Start(); err != nil {
			t.Fatal(err)
		}
		if err := r.Ping(ctx).Err(); err != nil {
			t.Errorf("PING after re-enabling the proxy (same port): %v", err)
		}
	})

	t.Run("pause", func(t *testing.T) {
		if err := c.Pause(ctx, "redis-1"); err != nil {
			t.Fatal(err)
		}
		if err := r1.Ping(ctx).Err(); err == nil {
			t.Error("PING of a paused server answered")
		}
		if err := c.Resume(ctx, "redis-1"); err != nil {
			t.Fatal(err)
		}
		if err := redisClient(t, e1.Addrs[0], time.Second).Ping(ctx).Err(); err != nil {
			t.Errorf("PING after Resume: %v", err)
		}
	})

	t.Run("kill-restart", func(t *testing.T) {
		if err := c.Kill(ctx, "redis-1"); err != nil {
			t.Fatal(err)
		}
		if err := r2.Get(ctx, "k").Err(); err == nil {
			t.Error("GET of a killed server answered")
		}
		if err := c.Restart(ctx, "redis-1"); err != nil {
			t.Fatal(err)
		}
		if c.Nodes()[0].Addr != nodes[0].Addr {
			t.Errorf("restart moved the node: %s -> %s", nodes[0].Addr, c.Nodes()[0].Addr)
		}
		if v, err := redisClient(t, e2.Addrs[0], time.Second).Get(ctx, "k").Result(); err == nil {
			t.Errorf("GET after restart = %q, want the key lost", v)
		}
	})

	if err := c.Kill(ctx, "nope"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("Kill(nope) = %v", err)
	}
	if _, err := c.Leader(ctx); err == nil {
		t.Error("Leader of redis-single must fail")
	}
}

func TestRedisMulti(t *testing.T) {
	t.Parallel()
	for _, proxies := range []bool{true, false} {
		t.Run(fmt.Sprintf("proxies=%v", proxies), func(t *testing.T) {
			c := startCluster(t, Spec{Topology: RedisMulti, Clients: 3, Proxies: proxies})
			ctx := ctxT(t, 10*time.Second)
			if len(c.Nodes()) != 5 {
				t.Fatalf("want 5 masters, have %+v", c.Nodes())
			}
			e := c.Endpoints(3)
			for i, a := range e.Addrs {
				r := redisClient(t, a, time.Second)
				if err := r.Set(ctx, "k", i, 0).Err(); err != nil {
					t.Fatalf("SET on node %d via %s: %v", i+1, a, err)
				}
			}
			for i, n := range c.Nodes() {
				v, err := redisClient(t, n.Addr, time.Second).Get(ctx, "k").Int()
				if err != nil || v != i {
					t.Errorf("%s has k=%d, %v; want %d (independent masters)", n.Name, v, err, i)
				}
			}
			_, err := c.Link(1, "redis-2")
			if proxies {
				if err != nil {
					t.Error(err)
				}
				if e.Addrs[0] == c.Nodes()[0].Addr {
					t.Error("proxied endpoints are the real addresses")
				}
			} else {
				if !errors.Is(err, ErrProxiesOff) {
					t.Errorf("Link without proxies = %v, want ErrProxiesOff", err)
				}
				if e.Dial != nil || e.Addrs[0] != c.Nodes()[0].Addr {
					t.Errorf("without proxies want real addresses and no Dial, have %+v", e)
				}
			}
		})
	}
}

func TestCrashIsReportedToSpecLog(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	c := startCluster(t, Spec{Topology: RedisMulti, Nodes: 2, Log: &log})
	ctx := ctxT(t, 10*time.Second)
	if err := c.Kill(ctx, "redis-1"); err != nil {
		t.Fatal(err)
	}
	n := c.byName["redis-2"]
	n.mu.Lock()
	pid := n.m.(*process).p.cmd.Process.Pid
	n.mu.Unlock()
	_ = syscall.Kill(pid, syscall.SIGKILL) // behind the cluster's back: a crash
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(log.String(), "redis-2") {
			break
		}
	}
	if s := log.String(); !strings.Contains(s, "redis-2") || !strings.Contains(s, "exited by itself") || strings.Contains(s, "redis-1") {
		t.Errorf("Spec.Log = %q, want one report of redis-2's crash and none of the killed redis-1", s)
	}
}

func TestRedisArgs(t *testing.T) {
	got := strings.Join(redisArgs([]string{"port 6379", `save ""`, "bind 0.0.0.0 -::1"}), "|")
	if want := "--port|6379|--save||--bind|0.0.0.0|-::1"; got != want {
		t.Errorf("redisArgs = %q, want %q", got, want)
	}
}
