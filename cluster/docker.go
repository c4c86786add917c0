package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// Default images of the docker backend: the official ones. No registry is reachable on the
// project's own machines, so its tests pass the images `make images` builds offline instead.
const (
	DefaultRedisImage     = "redis:7"
	DefaultZooKeeperImage = "zookeeper:3.8"
	DefaultPostgresImage  = "postgres:16"
	DefaultMariaDBImage   = "mariadb:10.11"
	DefaultEtcdImage      = "quay.io/coreos/etcd:v3.4.23"
)

// docker is the docker backend: every server is a container on a network of its own run, with
// its one port published on 127.0.0.1 only. Client links go through the same embedded proxies as
// the local backend's, in front of the published ports; servers reach each other on the network
// by container name.
type docker struct {
	spec    Spec
	id      string // the run id, in every container's and the network's lockchaos.run label
	pool    *dockertest.Pool
	net     *dockertest.Network
	gateway string // the network's gateway: where containers reach the harness (replication proxy)
}

// prepareDocker is Start's part for the docker backend: the images, the daemon, and leftovers of
// killed runs. It returns how to open the backend of one attempt.
func prepareDocker(ctx context.Context, spec Spec) (Spec, func(context.Context) (backend, error), error) {
	if spec.RedisImage == "" {
		spec.RedisImage = DefaultRedisImage
	}
	if spec.ZooKeeperImage == "" {
		spec.ZooKeeperImage = DefaultZooKeeperImage
	}
	if spec.PostgresImage == "" {
		spec.PostgresImage = DefaultPostgresImage
	}
	if spec.MariaDBImage == "" {
		spec.MariaDBImage = DefaultMariaDBImage
	}
	if spec.EtcdImage == "" {
		spec.EtcdImage = DefaultEtcdImage
	}
	pool, err := dockerPool(ctx)
	if err != nil {
		return spec, nil, err
	}
	// A harness killed by SIGKILL could not remove its containers; this is the first chance.
	if n, err := cleanDocker(ctx, pool); err != nil && spec.Log != nil {
		fmt.Fprintf(spec.Log, "lockchaos: removing leftovers of killed runs: %v\n", err)
	} else if n > 0 && spec.Log != nil {
		fmt.Fprintf(spec.Log, "lockchaos: removed %d containers and networks left by killed runs\n", n)
	}
	for _, kind := range topologyRegistry[spec.Topology].containers {
		if err := checkImage(pool, containers[kind].image(spec)); err != nil {
			return spec, nil, err
		}
	}
	return spec, func(ctx context.Context) (backend, error) { return openDocker(ctx, spec, pool) }, nil
}

// openDocker makes the run's network.
func openDocker(ctx context.Context, spec Spec, pool *dockertest.Pool) (*docker, error) {
	b := &docker{spec: spec, id: newRunID(), pool: pool}
	var err error
	b.net, err = pool.CreateNetwork(b.prefix(), func(o *dc.CreateNetworkOptions) {
		o.Driver = "bridge"
		o.Labels = b.labels("")
		o.Context = ctx
	})
	if err != nil {
		_ = removeRun(context.Background(), pool, b.id)
		return nil, fmt.Errorf("create docker network: %w", err)
	}
	// The create answer holds only the id; the gateway is in the network's inspect.
	if info, err := pool.Client.NetworkInfo(b.net.Network.ID); err == nil {
		b.net.Network = info
	}
	if ipam := b.net.Network.IPAM.Config; len(ipam) > 0 {
		b.gateway = ipam[0].Gateway
	}
	return b, nil
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// prefix names the run's network, and with a node's name its container.
func (b *docker) prefix() string { return "lockchaos-" + b.id }

func (b *docker) name() string   { return Docker }
func (b *docker) runID() string  { return b.id }
func (b *docker) ports(Kind) int { return 1 }

// The docker backend's links are embedded proxies, and its nodes' machines run process faults.
func (b *docker) remoteLinks() *remoteProxies                          { return nil }
func (b *docker) control(context.Context, *node, string) (bool, error) { return false, nil }
func (b *docker) restore(context.Context) error                        { return nil }

// containerData is where a container keeps its server's files.
const containerData = "/data"

// container is how the docker backend runs a server of one kind, registered from the kind's own
// file with registerContainer.
type container struct {
	// image is the image its containers run (a Spec field, or a fixed name).
	image func(s Spec) string
	// port is the server's port inside the container: its default, as the official image expects.
	port int
	// reuse makes Restart start the same container again, keeping its files (a sentinel's
	// config, a ZooKeeper member's or PostgreSQL's data dir) as the local backend keeps the node's
	// dir; otherwise Restart runs a fresh container (redis: empty).
	reuse bool
	// user is who the container runs as ("": the image's).
	user string
	// ready bounds the wait for the server to answer (default 20 s).
	ready time.Duration
	// start returns the command (nil: the image's) and environment of a container's start.
	start func(b *docker, m *dockerNode, restart bool) (cmd, env []string)
}

// containers holds, by kind, the servers the docker backend runs.
var containers = map[Kind]container{}

// registerContainer says how the docker backend runs servers of kind; call it from init in the
// kind's file.
func registerContainer(kind Kind, c container) {
	if _, dup := containers[kind]; dup {
		panic("cluster: duplicate container kind " + kind)
	}
	containers[kind] = c
}

// machine: a node's Addr is its published port on 127.0.0.1, its inner address its container's
// name and the server's own port.
func (b *docker) machine(n *node) machine {
	c := containers[n.Kind]
	m := &dockerNode{b: b, n: n, c: c, name: b.prefix() + "-" + n.Name, hostPort: n.ports[0]}
	if c.image != nil {
		m.image = c.image(b.spec) // else run says the backend runs no such server
	}
	n.readyTimeout = cmp.Or(c.ready, 20*time.Second)
	n.Addr = localAddr(m.hostPort)
	n.inner = innerAddr(m.name, c.port)
	return m
}

// replicationListen: the replica container reaches the harness on the run network's gateway.
func (b *docker) replicationListen() (string, error) {
	if b.gateway == "" {
		return "", fmt.Errorf("docker network %s has no gateway address for the replication proxy", b.prefix())
	}
	return net.JoinHostPort(b.gateway, "0"), nil
}

// close removes every container of the run (found by its label, so also one whose start failed
// half way), then the network.
func (b *docker) close() error {
	return removeRun(context.Background(), b.pool, b.id)
}

// innerAddr is a node's address on the run network.
func innerAddr(container string, port int) string {
	return net.JoinHostPort(container, fmt.Sprint(port))
}
