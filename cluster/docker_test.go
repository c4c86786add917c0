package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/lockchaos/lockchaos/internal/testenv"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/redis/go-redis/v9"
)

// The images the tests use: `make images` builds them offline (no registry is reachable here).
const (
	testRedisImage    = "lockchaos/redis"
	testZKImage       = "lockchaos/zookeeper"
	testPostgresImage = "lockchaos/postgres"
)

// needDocker skips the test when docker or an image is missing, unless CI asks for them with
// LOCKCHAOS_REQUIRE_DOCKER=1, where that is a failure.
func needDocker(t *testing.T, images ...string) {
	t.Helper()
	testenv.Servers(t)
	fail := func(err error) {
		t.Helper()
		testenv.Missing(t, testenv.RequireDocker, err.Error())
	}
	pool, err := dockerPool(context.Background())
	if err != nil {
		fail(err)
	}
	for _, img := range images {
		if err := checkImage(pool, img); err != nil {
			fail(err)
		}
	}
}

// startDockerCluster starts spec on the docker backend with the local images, fails the test on
// error, and at the end closes it and checks that no container or network of the run survives.
func startDockerCluster(t *testing.T, spec Spec) *topo {
	t.Helper()
	spec.Backend = Docker
	spec.RedisImage, spec.ZooKeeperImage, spec.PostgresImage = testRedisImage, testZKImage, testPostgresImage
	var images []string
	for _, k := range topologyRegistry[spec.Topology].containers {
		images = append(images, containers[k].image(spec))
	}
	needDocker(t, images...)
	if spec.Dir == "" {
		spec.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	t0 := time.Now()
	c, err := Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start(%s on docker): %v", spec.Topology, err)
	}
	t.Logf("%s on docker (%d nodes, proxies %v) started in %v", spec.Topology, len(c.Nodes()), spec.Proxies, time.Since(t0).Round(time.Millisecond))
	d := c.(*topo)
	id := d.be.(*docker).id
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := d.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if left := labelled(t, labelRun+"="+id); len(left) > 0 {
			t.Errorf("after Close, docker objects of run %s remain: %v", id, left)
		}
	})
	return d
}

// labelled lists the containers and networks carrying label (k=v), as "container NAME" and
// "network NAME".
func labelled(t *testing.T, label string) []string {
	t.Helper()
	pool, err := dockerPool(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := pool.Client.ListContainers(dc.ListContainersOptions{All: true, Filters: map[string][]string{"label": {label}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, "container "+strings.Join(c.Names, ","))
	}
	ns, err := pool.Client.FilteredListNetworks(dc.NetworkFilterOpts{"label": {label: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		out = append(out, "network "+n.Name)
	}
	return out
}

// checkLoopbackOnly fails unless every published port of the node's container is on 127.0.0.1.
func checkLoopbackOnly(t *testing.T, c *topo, name string) {
	t.Helper()
	n, _ := c.node(name)
	ct, err := c.be.(*docker).pool.Client.InspectContainer(n.m.(*dockerNode).name)
	if err != nil {
		t.Fatal(err)
	}
	if len(ct.NetworkSettings.Ports) == 0 {
		t.Errorf("%s publishes no port", name)
	}
	for port, bs := range ct.NetworkSettings.Ports {
		for _, b := range bs {
			if b.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %s on %s:%s, want 127.0.0.1 only", name, port, b.HostIP, b.HostPort)
			}
		}
	}
}

func TestDockerRedisSingle(t *testing.T) {
	t.Parallel()
	c := startDockerCluster(t, Spec{Topology: RedisSingle, Clients: 2, Proxies: true})
	ctx := ctxT(t, 60*time.Second)
	nodes := c.Nodes()
	if len(nodes) != 1 || nodes[0].Name != "redis-1" || !strings.HasPrefix(nodes[0].Addr, "127.0.0.1:") {
		t.Fatalf("Nodes() = %+v", nodes)
	}
	checkLoopbackOnly(t, c, "redis-1")
	e1, e2 := c.Endpoints(1), c.Endpoints(2)
	if e1.Addrs[0] == nodes[0].Addr || e1.Addrs[0] == e2.Addrs[0] {
		t.Fatalf("clients must get their own proxies: node %s, c1 %v, c2 %v", nodes[0].Addr, e1.Addrs, e2.Addrs)
	}
	r1 := redisClient(t, e1.Addrs[0], 300*time.Millisecond)
	r2 := redisClient(t, e2.Addrs[0], 300*time.Millisecond)
	if err := r1.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through proxy: %v", err)
	}
	if v, err := r2.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET through client 2's proxy = %q, %v", v, err)
	}
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
	c := startDockerCluster(t, Spec{Topology: RedisMulti, Nodes: 3, Clients: 1, Proxies: true})
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
	c := startDockerCluster(t, Spec{Topology: RedisSentinel, Clients: 1, Proxies: true})
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
	if a, err := sentinelMasterAddr(ctx, c.byName["sentinel-1"].Addr); err != nil || a != c.byName["redis-2"].inner {
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
		v, err := redisDo(ctx, c.byName["redis-1"].Addr, time.Second, "INFO", "replication")
		if s, _ := v.(string); err == nil && strings.Contains(s, "role:slave") {
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
	c := startDockerCluster(t, Spec{Topology: RedisMulti, Nodes: 2, Log: &log})
	ctx := ctxT(t, 30*time.Second)
	if err := c.Kill(ctx, "redis-1"); err != nil {
		t.Fatal(err)
	}
	n := c.byName["redis-2"]
	if err := c.be.(*docker).pool.Client.KillContainer(dc.KillContainerOptions{ID: n.m.(*dockerNode).name}); err != nil {
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
			c := startDockerCluster(t, Spec{Topology: ZooKeeper, Nodes: nodes, Clients: 1, Proxies: true})
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
			n, _ := c.node(leader)
			one, _, err := zk.Connect([]string{n.Addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietZK{}))
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
	_, err := Start(context.Background(), Spec{Topology: RedisSingle, Backend: Docker, RedisImage: "lockchaos/no-such-image:1"})
	if !errors.Is(err, ErrMissingBinary) || !strings.Contains(err.Error(), "make images") {
		t.Fatalf("Start with a missing image: %v; want ErrMissingBinary naming make images", err)
	}
}

func TestDockerRequirements(t *testing.T) {
	needDocker(t)
	rs := Requirements(Docker)
	if len(rs) != 8 || !rs[0].OK || !strings.Contains(rs[0].Detail, "Docker Engine") || rs[3].Name != "postgres image" ||
		rs[4].Name != "mariadb image" || rs[5].Name != "pgbouncer image" || rs[6].Name != "etcd image" ||
		rs[7].Name != "topologies" || !strings.Contains(rs[7].Detail, "postgres-standby, redis-cluster") || strings.Contains(rs[7].Detail, "not") {
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
	c, err := Start(context.Background(), Spec{Topology: topology, Nodes: 2, Backend: Docker, RedisImage: testRedisImage, Dir: os.TempDir()})
	if err != nil {
		fmt.Println("ERROR", strings.ReplaceAll(err.Error(), "\n", " | "))
		os.Exit(1)
	}
	fmt.Println("READY", c.(*topo).be.(*docker).id)
	time.Sleep(time.Minute)
	os.Exit(3) // never Close: the parent's SIGKILL leaves the containers behind
}

// killedRun starts a redis-multi cluster of 2 in a child process (the test binary again), SIGKILLs
// the child and returns the run's label, checking that its 2 containers and network survived.
func killedRun(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDockerHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), dockerHelperEnv+"="+RedisMulti)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := readLine(out, 60*time.Second)
	if err != nil || !strings.HasPrefix(line, "READY ") {
		t.Fatalf("helper: %q, %v", line, err)
	}
	run := labelRun + "=" + strings.TrimPrefix(line, "READY ")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if got := labelled(t, run); len(got) != 3 {
		t.Fatalf("want the 2 containers and the network of the killed run, have %v", got)
	}
	return run
}

// TestDockerCleanAfterSIGKILL: a harness killed by SIGKILL leaves its containers and network;
// CleanDocker, and the next Start, remove them and nothing labelled with the run survives.
func TestDockerCleanAfterSIGKILL(t *testing.T) {
	needDocker(t, testRedisImage)
	t.Run("CleanDocker", func(t *testing.T) {
		run := killedRun(t)
		removed, err := CleanDocker(context.Background())
		if err != nil {
			t.Fatalf("CleanDocker: %v", err)
		}
		if removed < 3 {
			t.Errorf("CleanDocker removed %d, want at least the killed run's 3", removed)
		}
		if left := labelled(t, run); len(left) > 0 {
			t.Fatalf("after CleanDocker, the killed run's objects remain: %v", left)
		}
	})
	t.Run("next Start", func(t *testing.T) {
		run := killedRun(t)
		startDockerCluster(t, Spec{Topology: RedisSingle})
		if left := labelled(t, run); len(left) > 0 {
			t.Fatalf("after the next Start, the killed run's objects remain: %v", left)
		}
	})
}

// TestDockerPortTaken: a published port someone took meanwhile is errAddrInUse, which Start
// retries on fresh ports, and the failed container does not stay behind.
func TestDockerPortTaken(t *testing.T) {
	t.Parallel()
	c := startDockerCluster(t, Spec{Topology: RedisSingle})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n := c.redisNode("redis-x", []int{l.Addr().(*net.TCPAddr).Port}, nil)
	n.mu.Lock()
	err = n.launch(ctxT(t, 30*time.Second), false)
	n.mu.Unlock()
	if !errors.Is(err, errAddrInUse) {
		t.Fatalf("launch on a taken port: %v; want errAddrInUse", err)
	}
	if _, err := c.be.(*docker).pool.Client.InspectContainer(n.m.(*dockerNode).name); !isNoSuchContainer(err) {
		t.Errorf("the container that failed to start is still there (%v)", err)
	}
}

// TestDockerCleanSparesLiveRuns: CleanDocker removes nothing of a run whose harness lives.
func TestDockerCleanSparesLiveRuns(t *testing.T) {
	c := startDockerCluster(t, Spec{Topology: RedisSingle})
	if _, err := CleanDocker(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := labelled(t, labelRun+"="+c.be.(*docker).id); len(got) != 2 {
		t.Fatalf("CleanDocker touched a live run: %v left of its container and network", got)
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

func TestRedisArgs(t *testing.T) {
	got := strings.Join(redisArgs([]string{"port 6379", `save ""`, "bind 0.0.0.0 -::1"}), "|")
	if want := "--port|6379|--save||--bind|0.0.0.0|-::1"; got != want {
		t.Errorf("redisArgs = %q, want %q", got, want)
	}
}

// quietZK drops the zk client's reconnect chatter (a killed member is the point of the test).
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
