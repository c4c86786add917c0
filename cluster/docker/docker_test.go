package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/internal/testkit"
)

// redisPortOf is the redis server's port inside its container.
func redisPortOf(t *testing.T) int {
	t.Helper()
	c, ok := cluster.ContainerOf(cluster.KindRedis)
	if !ok {
		t.Fatal("no redis container registered")
	}
	return c.Port
}

func TestDockerRedisSingle(t *testing.T) {
	t.Parallel()
	c := startDockerCluster(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 2, Proxies: true})
	ctx := ctxT(t, 60*time.Second)
	nodes := c.Nodes()
	if len(nodes) != 1 || nodes[0].Name != "redis-1" || !strings.HasPrefix(nodes[0].Addr, "127.0.0.1:") {
		t.Fatalf("Nodes() = %+v", nodes)
	}
	checkLoopbackOnly(t, c, "redis-1")
	e1, e2 := c.Endpoints(1), c.Endpoints(2)
	r1, _ := testkit.OwnProxies(t, ctx, nodes[0].Addr, e1.Addrs[0], e2.Addrs[0])
	if m, err := c.Master(ctx); err != nil || m != "redis-1" {
		t.Fatalf("Master = %q, %v", m, err)
	}
	if _, err := c.Link(1, "redis-1"); err != nil {
		t.Fatalf("Link: %v", err)
	}

	t.Run("pause", func(t *testing.T) {
		if err := c.Pause(ctx, "redis-1"); err != nil {
			t.Fatal(err)
		}
		if err := r1.Ping(ctx).Err(); err == nil {
			t.Error("PING answered while the container is paused")
		}
		if err := c.Resume(ctx, "redis-1"); err != nil {
			t.Fatal(err)
		}
		r := redisClient(t, e1.Addrs[0], time.Second)
		if err := r.Ping(ctx).Err(); err != nil {
			t.Errorf("PING after resume: %v", err)
		}
	})

	t.Run("kill-restart", func(t *testing.T) {
		if err := c.Kill(ctx, "redis-1"); err != nil {
			t.Fatal(err)
		}
		r := redisClient(t, e1.Addrs[0], 300*time.Millisecond)
		if err := r.Ping(ctx).Err(); err == nil {
			t.Error("PING answered after Kill")
		}
		t0 := time.Now()
		if err := c.Restart(ctx, "redis-1"); err != nil {
			t.Fatal(err)
		}
		t.Logf("restart took %v", time.Since(t0).Round(time.Millisecond))
		checkLoopbackOnly(t, c, "redis-1")
		if n, err := r.DBSize(ctx).Result(); err != nil || n != 0 {
			t.Errorf("after Restart, through the same proxy: DBSIZE = %d, %v; want an empty server", n, err)
		}
		if err := r.Set(ctx, "k2", "v2", 0).Err(); err != nil {
			t.Errorf("SET after Restart: %v", err)
		}
	})
}

func TestDockerRedisMulti(t *testing.T) {
	t.Parallel()
	c := startDockerCluster(t, cluster.Spec{Topology: cluster.RedisMulti, Nodes: 3, Clients: 1, Proxies: true})
	ctx := ctxT(t, 30*time.Second)
	e := c.Endpoints(1)
	if len(e.Addrs) != 3 {
		t.Fatalf("Endpoints(1).Addrs = %v", e.Addrs)
	}
	for i, a := range e.Addrs {
		r := redisClient(t, a, time.Second)
		if err := r.Set(ctx, "k", fmt.Sprint(i), 0).Err(); err != nil {
			t.Fatalf("SET on node %d: %v", i+1, err)
		}
	}
	for i, a := range e.Addrs { // independent masters: each kept its own value
		if v, err := redisClient(t, a, time.Second).Get(ctx, "k").Result(); err != nil || v != fmt.Sprint(i) {
			t.Errorf("GET on node %d = %q, %v", i+1, v, err)
		}
	}
}

func TestDockerSentinel(t *testing.T) {
	t.Parallel()
	c := startDockerCluster(t, cluster.Spec{Topology: cluster.RedisSentinel, Clients: 1, Proxies: true})
	ctx := ctxT(t, 60*time.Second)
	e := c.Endpoints(1)
	if len(e.SentinelAddrs) != 3 || e.MasterName == "" || e.Dial == nil {
		t.Fatalf("Endpoints(1) = %+v", e)
	}
	if _, err := c.ReplicationLink(); err != nil {
		t.Fatal(err)
	}
	rc := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: e.MasterName, SentinelAddrs: e.SentinelAddrs, Dialer: e.Dial,
		Protocol: 2, DisableIdentity: true, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	defer rc.Close()
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through Sentinel and the proxy: %v", err)
	}
	if m, err := c.Master(ctx); err != nil || m != "redis-1" {
		t.Fatalf("Master = %q, %v", m, err)
	}
	// Failover: kill the master; Sentinel promotes the replica and clients follow it.
	if err := c.Kill(ctx, "redis-1"); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := c.Master(ctx)
		if err == nil && m == "redis-2" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no failover to redis-2: %q, %v", m, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for {
		err := rc.Set(ctx, "k", "after", 0).Err()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("SET after failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A restarted sentinel is the same container: it remembers the failover at once.
	if err := c.Restart(ctx, "sentinel-1"); err != nil {
		t.Fatal(err)
	}
	if a, err := sentinelMasterAddr(ctx, c.addr(t, "sentinel-1"), e.MasterName); err != nil || a != innerAddr(c.container("redis-2"), redisPortOf(t)) {
		t.Errorf("restarted sentinel-1 says the master is %q, %v; want redis-2", a, err)
	}
	// The old master comes back empty, on a new container address under the same name; the
	// sentinels find it by name and make it a replica of the new master.
	if err := c.Restart(ctx, "redis-1"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	defer func() {
		t.Logf("redis-1 became a replica %v after its restart", time.Since(t0).Round(time.Millisecond))
	}()
	for {
		v, err := redisClient(t, c.addr(t, "redis-1"), time.Second).Info(ctx, "replication").Result()
		if err == nil && strings.Contains(v, "role:slave") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("restarted redis-1 never became a replica of redis-2: %v %v", v, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A restarted redis node is a fresh container: its log is its new life's. A sentinel's
	// container is started again, so its log holds both its lives.
	promotedBySome(t, savedLogs(t, c, map[string][]string{
		"redis-1":    {"Ready to accept connections", "MASTER <-> REPLICA sync"},
		"redis-2":    {"MASTER MODE enabled"},
		"sentinel-1": {"Sentinel ID", "Sentinel ID"},
	}))
}

// TestDockerCrashReport: a container that dies by itself (here: killed behind the cluster's
// back) is reported to Spec.Log; Kill through the cluster is not.
func TestDockerCrashReport(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	c := startDockerCluster(t, cluster.Spec{Topology: cluster.RedisMulti, Nodes: 2, Log: &log})
	ctx := ctxT(t, 30*time.Second)
	if err := c.Kill(ctx, "redis-1"); err != nil {
		t.Fatal(err)
	}
	pool, err := dockerPool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Client.KillContainer(dc.KillContainerOptions{ID: c.container("redis-2")}); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(log.String(), "redis-2") {
		if ctx.Err() != nil {
			t.Fatalf("no report of redis-2's death in Spec.Log: %q", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := log.String(); strings.Contains(s, "redis-1") || !strings.Contains(s, "exited by itself") {
		t.Errorf("Spec.Log = %q; want only redis-2 reported", s)
	}
}

func TestDockerZooKeeper(t *testing.T) {
	for _, nodes := range []int{1, 3} {
		t.Run(fmt.Sprint(nodes), func(t *testing.T) {
			t.Parallel()
			c := startDockerCluster(t, cluster.Spec{Topology: cluster.ZooKeeper, Nodes: nodes, Clients: 1, Proxies: true})
			ctx := ctxT(t, 90*time.Second)
			for _, n := range c.Nodes() {
				checkLoopbackOnly(t, c, n.Name)
			}
			leader, err := c.Leader(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conn, _, err := zk.Connect(c.Endpoints(1).Addrs, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietZK{}))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Create("/lockchaos", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create through the proxies: %v", err)
			}
			if nodes == 1 {
				return
			}
			// Kill the leader: the other two elect one; the old leader restarts and rejoins with
			// its data (the same container).
			if err := c.Kill(ctx, leader); err != nil {
				t.Fatal(err)
			}
			for {
				l, err := c.Leader(ctx)
				if err == nil && l != leader {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("no new leader after killing %s: %v", leader, err)
				}
				time.Sleep(200 * time.Millisecond)
			}
			t0 := time.Now()
			if err := c.Restart(ctx, leader); err != nil {
				t.Fatal(err)
			}
			t.Logf("restart of %s took %v", leader, time.Since(t0).Round(time.Millisecond))
			one, _, err := zk.Connect([]string{c.addr(t, leader)}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietZK{}))
			if err != nil {
				t.Fatal(err)
			}
			defer one.Close()
			if v, _, err := one.Get("/lockchaos"); err != nil || string(v) != "x" {
				t.Errorf("the restarted member reads %q, %v", v, err)
			}
		})
	}
}

func TestDockerMissingImage(t *testing.T) {
	needDocker(t)
	_, err := cluster.Start(context.Background(), cluster.Spec{Topology: cluster.RedisSingle, Backend: cluster.Docker, RedisImage: "lockchaos/no-such-image:1"})
	if !errors.Is(err, cluster.ErrMissingBinary) || !strings.Contains(err.Error(), "make images") {
		t.Fatalf("Start with a missing image: %v; want ErrMissingBinary naming make images", err)
	}
}

func TestDockerRequirements(t *testing.T) {
	needDocker(t)
	rs := cluster.Requirements(cluster.Docker)
	if len(rs) != 8 || !rs[0].OK || !strings.Contains(rs[0].Detail, "Docker Engine") || rs[3].Name != "postgres image" ||
		rs[4].Name != "mariadb image" || rs[5].Name != "pgbouncer image" || rs[6].Name != "etcd image" ||
		rs[7].Name != "topologies" || !strings.Contains(rs[7].Detail, "postgres-standby, redis-cluster") ||
		strings.Count(rs[7].Detail, "not ") != 1 || !strings.HasSuffix(rs[7].Detail, "not kubernetes (use --backend local)") {
		t.Fatalf("Requirements(docker) = %+v", rs)
	}
	// An image with no official one (pgbouncer's): missing, make images is the fix.
	pool, err := dockerPool(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r := imageRequirement(pool, "x image", "", "lockchaos/no-such-image", ""); r.OK || !strings.Contains(r.Fix, "make images") {
		t.Errorf("a missing image without an official one: %+v, want not OK and make images as the fix", r)
	}
	for _, r := range rs {
		t.Logf("%-16s ok=%v %s", r.Name, r.OK, r.Detail)
		if !r.OK && r.Fix == "" {
			t.Errorf("%s: a missing requirement needs a fix: %+v", r.Name, r)
		}
	}
}

const dockerHelperEnv = "LOCKCHAOS_DOCKER_HELPER"

// TestDockerHelperProcess is not a test: TestDockerCleanAfterSIGKILL runs the test binary again
// with dockerHelperEnv set, and this starts a cluster on docker in that child, reports READY with
// the run id and waits to be killed.
func TestDockerHelperProcess(t *testing.T) {
	topology := os.Getenv(dockerHelperEnv)
	if topology == "" {
		t.Skip("helper for TestDockerCleanAfterSIGKILL")
	}
	c, err := cluster.Start(context.Background(), cluster.Spec{Topology: topology, Nodes: 2, Backend: cluster.Docker, RedisImage: testRedisImage, Dir: os.TempDir()})
	if err != nil {
		fmt.Println("ERROR", strings.ReplaceAll(err.Error(), "\n", " | "))
		os.Exit(1)
	}
	fmt.Println("READY", runOf(t, c))
	time.Sleep(time.Minute)
	os.Exit(3) // never Close: the parent's SIGKILL leaves the containers behind
}

// killedRun starts a redis-multi cluster of 2 in a child process (the test binary again), SIGKILLs
// the child and returns the run's label, checking that its 2 containers and network survived.
func killedRun(t *testing.T) string {
	t.Helper()
	run := labelRun + "=" + testkit.KilledHelper(t, "TestDockerHelperProcess", []string{dockerHelperEnv + "=" + cluster.RedisMulti}, 60*time.Second, nil)
	if got := labelled(t, run); len(got) != 3 {
		t.Fatalf("want the 2 containers and the network of the killed run, have %v", got)
	}
	return run
}

// TestDockerCleanAfterSIGKILL: a harness killed by SIGKILL leaves its containers and network;
// Clean, and the next Start, remove them and nothing labelled with the run survives.
func TestDockerCleanAfterSIGKILL(t *testing.T) {
	needDocker(t, testRedisImage)
	t.Run("Clean", func(t *testing.T) {
		run := killedRun(t)
		removed, err := Clean(context.Background())
		if err != nil {
			t.Fatalf("Clean: %v", err)
		}
		if removed < 3 {
			t.Errorf("Clean removed %d, want at least the killed run's 3", removed)
		}
		if left := labelled(t, run); len(left) > 0 {
			t.Fatalf("after Clean, the killed run's objects remain: %v", left)
		}
	})
	t.Run("next Start", func(t *testing.T) {
		run := killedRun(t)
		startDockerCluster(t, cluster.Spec{Topology: cluster.RedisSingle})
		if left := labelled(t, run); len(left) > 0 {
			t.Fatalf("after the next Start, the killed run's objects remain: %v", left)
		}
	})
}

// TestDockerPortTaken: a published port someone took meanwhile is cluster.ErrAddrInUse, which
// Start retries on fresh ports, and the failed container does not stay behind.
func TestDockerPortTaken(t *testing.T) {
	t.Parallel()
	needDocker(t, testRedisImage)
	ctx := ctxT(t, 30*time.Second)
	_, open, err := prepare(ctx, cluster.Spec{Topology: cluster.RedisSingle, RedisImage: testRedisImage})
	if err != nil {
		t.Fatal(err)
	}
	be, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := be.(*docker)
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := labelled(t, labelRun+"="+b.id); len(left) > 0 {
			t.Errorf("after Close, docker objects of run %s remain: %v", b.id, left)
		}
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := b.Machine(cluster.NewServer("redis-x", cluster.KindRedis, []int{l.Addr().(*net.TCPAddr).Port}))
	err = m.Start(ctx, false)
	if !errors.Is(err, cluster.ErrAddrInUse) {
		t.Fatalf("start on a taken port: %v; want cluster.ErrAddrInUse", err)
	}
	if _, err := b.pool.Client.InspectContainer(m.(*dockerNode).name); !isNoSuchContainer(err) {
		t.Errorf("the container that failed to start is still there (%v)", err)
	}
}

// TestDockerCleanSparesLiveRuns: Clean removes nothing of a run whose harness lives.
func TestDockerCleanSparesLiveRuns(t *testing.T) {
	c := startDockerCluster(t, cluster.Spec{Topology: cluster.RedisSingle})
	if _, err := Clean(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := labelled(t, labelRun+"="+c.id); len(got) != 2 {
		t.Fatalf("Clean touched a live run: %v left of its container and network", got)
	}
}

func TestOwnerGone(t *testing.T) {
	if ownerGone(ownerID(os.Getpid())) {
		t.Error("this process is gone?")
	}
	host, _ := os.Hostname()
	for _, owner := range []string{
		"", "garbage",
		fmt.Sprintf("%s/%s/%d/%s", host, "another-boot", os.Getpid(), procStart(os.Getpid())),
		fmt.Sprintf("%s/%s/%d/%s", host, bootID(), os.Getpid(), "1"), // pid reused
		fmt.Sprintf("%s/%s/%d/%s", host, bootID(), 1<<22+1, "1"),     // no such pid
	} {
		if !ownerGone(owner) {
			t.Errorf("ownerGone(%q) = false", owner)
		}
	}
	if ownerGone("other-host/x/1/1") {
		t.Error("a run of another host must be left alone")
	}
}

func TestSplitImage(t *testing.T) {
	for in, want := range map[string][2]string{
		"redis:7":                 {"redis", "7"},
		"lockchaos/redis":         {"lockchaos/redis", "latest"},
		"localhost:5000/redis":    {"localhost:5000/redis", "latest"},
		"localhost:5000/redis:7a": {"localhost:5000/redis", "7a"},
	} {
		if r, tag := splitImage(in); r != want[0] || tag != want[1] {
			t.Errorf("splitImage(%q) = %q, %q; want %q", in, r, tag, want)
		}
	}
}
