package docker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/internal/testkit"
	"github.com/lockchaos/lockchaos/internal/testenv"
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

// dockerRun is a cluster started on the docker backend, with its run's id: the cluster's backend
// is not reachable through cluster.Cluster, so the tests find the run by its containers' labels.
type dockerRun struct {
	cluster.Cluster
	id string
}

// container names node's container in the run (as the backend names it).
func (r *dockerRun) container(node string) string { return (&docker{id: r.id}).ContainerName(node) }

// addr returns where the harness reaches node.
func (r *dockerRun) addr(t *testing.T, node string) string {
	t.Helper()
	for _, n := range r.Nodes() {
		if n.Name == node {
			return n.Addr
		}
	}
	t.Fatalf("no node %s in %+v", node, r.Nodes())
	return ""
}

// startDockerCluster starts spec on the docker backend with the local images, fails the test on
// error, and at the end closes it and checks that no container or network of the run survives.
func startDockerCluster(t *testing.T, spec cluster.Spec) *dockerRun {
	t.Helper()
	spec.Backend = cluster.Docker
	spec.RedisImage, spec.ZooKeeperImage, spec.PostgresImage = testRedisImage, testZKImage, testPostgresImage
	var images []string
	for _, k := range cluster.ContainerKinds(spec.Topology) {
		c, _ := cluster.ContainerOf(k)
		images = append(images, c.Image(spec))
	}
	needDocker(t, images...)
	if spec.Dir == "" {
		spec.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	t0 := time.Now()
	c, err := cluster.Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start(%s on docker): %v", spec.Topology, err)
	}
	t.Logf("%s on docker (%d nodes, proxies %v) started in %v", spec.Topology, len(c.Nodes()), spec.Proxies, time.Since(t0).Round(time.Millisecond))
	d := &dockerRun{Cluster: c, id: runOf(t, c)}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := d.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if left := labelled(t, labelRun+"="+d.id); len(left) > 0 {
			t.Errorf("after Close, docker objects of run %s remain: %v", d.id, left)
		}
	})
	return d
}

// runOf returns the run id of a cluster on the docker backend: the run label of the container
// that publishes its first node's address (a published port is one container's).
func runOf(t *testing.T, c cluster.Cluster) string {
	t.Helper()
	_, port, err := net.SplitHostPort(c.Nodes()[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := dockerPool(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := pool.Client.ListContainers(dc.ListContainersOptions{Filters: map[string][]string{"label": {labelApp + "=1"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range cs {
		for _, p := range ct.Ports {
			if p.IP == "127.0.0.1" && strconv.FormatInt(p.PublicPort, 10) == port {
				return ct.Labels[labelRun]
			}
		}
	}
	t.Fatalf("no running container publishes %s", c.Nodes()[0].Addr)
	return ""
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
func checkLoopbackOnly(t *testing.T, c *dockerRun, name string) {
	t.Helper()
	pool, err := dockerPool(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ct, err := pool.Client.InspectContainer(c.container(name))
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

// The helpers cluster's tests share (cluster/internal/testkit).
var (
	redisClient    = testkit.RedisClient
	ctxT           = testkit.CtxT
	promotedBySome = testkit.PromotedBySome
)

// syncBuffer is a bytes.Buffer safe for the cluster's watcher goroutines.
type syncBuffer = testkit.SyncBuffer

// sentinelMasterAddr asks the sentinel at addr where the master called name is.
func sentinelMasterAddr(ctx context.Context, addr, name string) (string, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	defer sc.Close()
	a, err := sc.GetMasterAddrByName(ctx, name).Result()
	if err != nil {
		return "", err
	}
	if len(a) != 2 {
		return "", fmt.Errorf("sentinel does not know master %s yet", name)
	}
	return a[0] + ":" + a[1], nil
}

// savedLogs is testkit.SavedLogs of c's nodes.
func savedLogs(t *testing.T, c cluster.Cluster, want map[string][]string) map[string]string {
	t.Helper()
	var names []string
	for _, n := range c.Nodes() {
		names = append(names, n.Name)
	}
	return testkit.SavedLogs(t, c.SaveLogs, names, want)
}

// quietZK drops the zk client's reconnect chatter (a killed member is the point of the test).
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
