package cluster

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterClient is client cl's Redis Cluster client, through its own proxies; dialed records
// every address it dialled after the Endpoints' mapping.
func clusterClient(t *testing.T, c *topo, cl int, dialed *sync.Map) *redis.ClusterClient {
	t.Helper()
	e := c.Endpoints(cl)
	if !e.Cluster || e.Dial == nil || len(e.Addrs) != 6 {
		t.Fatalf("Endpoints(%d) = %+v, want a cluster's 6 proxied seeds and a Dial", cl, e)
	}
	rc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: e.Addrs, Protocol: 2, DisableIdentity: true, MaxRetries: -1, MaxRedirects: 3,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := e.Dial(ctx, network, addr)
			if err == nil && dialed != nil {
				dialed.Store(conn.RemoteAddr().String(), addr)
			}
			return conn, err
		},
	})
	t.Cleanup(func() { rc.Close() })
	return rc
}

func TestRedisCluster(t *testing.T) {
	c := startCluster(t, Spec{Topology: RedisCluster, Clients: 2, Proxies: true})
	ctx := ctxT(t, 90*time.Second)
	nodes := c.Nodes()
	if len(nodes) != 6 || nodes[0].Name != "redis-1" || nodes[5].Name != "redis-6" {
		t.Fatalf("Nodes() = %+v", nodes)
	}
	master, err := c.Master(ctx)
	if err != nil || !slices.Contains([]string{"redis-1", "redis-2", "redis-3"}, master) {
		t.Fatalf("Master = %q, %v; want the master of the slot of %q", master, err, DefaultLockKey)
	}
	var dialed sync.Map
	r1 := clusterClient(t, c, 1, &dialed)
	r2 := clusterClient(t, c, 2, nil)
	if err := r1.Set(ctx, DefaultLockKey, "v", 0).Err(); err != nil {
		t.Fatalf("SET through client 1's proxies: %v", err)
	}
	if v, err := r2.Get(ctx, DefaultLockKey).Result(); err != nil || v != "v" {
		t.Fatalf("GET through client 2's proxies = %q, %v", v, err)
	}
	// Every connection client 1 made went to one of its own proxies, never to a node's real or
	// announced address.
	own := map[string]bool{}
	for _, a := range c.Endpoints(1).Addrs {
		own[a] = true
	}
	dialed.Range(func(k, v any) bool {
		if !own[k.(string)] {
			t.Errorf("client 1 dialled %v (asked for %v), which is not one of its proxies %v", k, v, c.Endpoints(1).Addrs)
		}
		return true
	})

	t.Run("partition of one client from the slot's master", func(t *testing.T) {
		link, err := c.FaultLink(1, master)
		if err != nil {
			t.Fatal(err)
		}
		if err := link.AddToxic(ctx, "cut", HoldToxic, "upstream", nil); err != nil {
			t.Fatal(err)
		}
		err = r1.Set(ctx, DefaultLockKey, "cut-off", 0).Err()
		var nerr net.Error
		if !errors.As(err, &nerr) || !nerr.Timeout() {
			t.Errorf("SET by the partitioned client 1 = %v, want a timeout", err)
		}
		if err := r2.Set(ctx, "other", "x", 0).Err(); err != nil {
			t.Errorf("client 2 must not see client 1's partition: %v", err)
		}
		if v, err := r2.Get(ctx, DefaultLockKey).Result(); err != nil || v != "v" {
			t.Errorf("GET by client 2 = %q, %v; the cut-off SET must not have reached the master", v, err)
		}
		if err := link.RemoveToxic(ctx, "cut"); err != nil {
			t.Fatal(err)
		}
		// A partition holds bytes, it does not drop them (docs/design.md#faults): the held SET reaches the
		// master after the heal.
		var v string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if v, err = r2.Get(ctx, DefaultLockKey).Result(); err == nil && v == "cut-off" {
				break
			}
		}
		if v != "cut-off" {
			t.Errorf("GET after the heal = %q, %v; want the held SET's value delivered", v, err)
		}
	})

	t.Run("failover", func(t *testing.T) {
		if err := r2.Set(ctx, DefaultLockKey, "replicated", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := r2.Wait(ctx, 1, time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := c.Failover(ctx, master); err != nil {
			t.Fatal(err)
		}
		var next string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if next, err = c.Master(ctx); err == nil && next != master {
				break
			}
		}
		if next == "" || next == master {
			t.Fatalf("after killing %s, Master = %q, %v", master, next, err)
		}
		promoted := time.Since(t0)
		var v string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			r2.ReloadState(ctx)
			if v, err = r2.Get(ctx, DefaultLockKey).Result(); err == nil {
				break
			}
		}
		if v != "replicated" {
			t.Fatalf("GET on the promoted %s = %q, %v; want the replicated value", next, v, err)
		}
		t.Logf("failover: %s killed, %s master after %v, served client 2 after %v", master, next, promoted.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))

		// The old master comes back empty and rejoins as the new master's replica.
		if err := c.Restart(ctx, master); err != nil {
			t.Fatal(err)
		}
		if m, err := c.Master(ctx); err != nil || m != next {
			t.Errorf("after the restart of %s, Master = %q, %v; want %s", master, m, err, next)
		}
	})
}

// TestLocalOnlyRefusedByDocker: a topology without containers (every one registered has them
// now) is refused by the docker backend in one line naming the local backend, and taken by the
// others.
func TestLocalOnlyRefusedByDocker(t *testing.T) {
	localOnly := topology{}
	err := localOnly.runsOn("local-only", Docker)
	if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), "local backend") || strings.Contains(err.Error(), "\n") {
		t.Errorf("docker = %v; want one line wrapping ErrBadSpec that names the local backend", err)
	}
	for _, b := range []string{Local, External} {
		if err := localOnly.runsOn("local-only", b); err != nil {
			t.Errorf("%s = %v, want nil", b, err)
		}
	}
	if err := topologyRegistry[RedisCluster].runsOn(RedisCluster, Docker); err != nil {
		t.Errorf("redis-cluster on docker: %v, want it taken", err)
	}
}
