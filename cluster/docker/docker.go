// Package docker is lockchaos's docker backend: it runs a cluster's servers as containers (through
// dockertest), one network per run. Import it for its side effect to make Spec.Backend "docker" work.
package docker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/lockchaos/lockchaos/cluster"
)

func init() { cluster.RegisterBackend(cluster.Docker, prepare, requirements) }

// docker is the docker backend: every server is a container on a network of its own run, with
// its one port published on 127.0.0.1 only. Client links go through the same embedded proxies as
// the local backend's, in front of the published ports; servers reach each other on the network
// by container name.
type docker struct {
	spec    cluster.Spec
	id      string // the run id, in every container's and the network's lockchaos.run label
	pool    *dockertest.Pool
	net     *dockertest.Network
	gateway string // the network's gateway: where containers reach the harness (replication proxy)
}

// prepare is Start's part for the docker backend (cluster.Prepare): the images, the daemon, and
// leftovers of killed runs. It returns how to open the backend of one attempt.
func prepare(ctx context.Context, spec cluster.Spec) (cluster.Spec, func(context.Context) (cluster.Backend, error), error) {
	if spec.RedisImage == "" {
		spec.RedisImage = cluster.DefaultRedisImage
	}
	if spec.ZooKeeperImage == "" {
		spec.ZooKeeperImage = cluster.DefaultZooKeeperImage
	}
	if spec.PostgresImage == "" {
		spec.PostgresImage = cluster.DefaultPostgresImage
	}
	if spec.MariaDBImage == "" {
		spec.MariaDBImage = cluster.DefaultMariaDBImage
	}
	if spec.EtcdImage == "" {
		spec.EtcdImage = cluster.DefaultEtcdImage
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
	for _, kind := range cluster.ContainerKinds(spec.Topology) {
		c, _ := cluster.ContainerOf(kind)
		if err := checkImage(pool, c.Image(spec)); err != nil {
			return spec, nil, err
		}
	}
	return spec, func(ctx context.Context) (cluster.Backend, error) { return openDocker(ctx, spec, pool) }, nil
}

// openDocker makes the run's network.
func openDocker(ctx context.Context, spec cluster.Spec, pool *dockertest.Pool) (*docker, error) {
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

// Name, RunID, Ports: the cluster.Backend of a run.
func (b *docker) Name() string           { return cluster.Docker }
func (b *docker) RunID() string          { return b.id }
func (b *docker) Ports(cluster.Kind) int { return 1 }

// Spec and ContainerName are the cluster.ContainerEnv a kind's container command reads.
func (b *docker) Spec() cluster.Spec               { return b.spec }
func (b *docker) ContainerName(node string) string { return b.prefix() + "-" + node }

// Machine: a node's Addr is its published port on 127.0.0.1, its inner address its container's
// name and the server's own port.
func (b *docker) Machine(s *cluster.Server) cluster.Machine {
	c, ok := cluster.ContainerOf(s.Kind())
	m := &dockerNode{b: b, s: s, c: c, runs: ok, name: b.ContainerName(s.Name()), hostPort: s.Ports()[0]}
	if c.Image != nil {
		m.image = c.Image(b.spec) // else run says the backend runs no such server
	}
	s.SetAddrs(net.JoinHostPort("127.0.0.1", strconv.Itoa(m.hostPort)), innerAddr(m.name, c.Port), cmp.Or(c.Ready, 20*time.Second))
	return m
}

// ReplicationListen: the replica container reaches the harness on the run network's gateway.
func (b *docker) ReplicationListen() (string, error) {
	if b.gateway == "" {
		return "", fmt.Errorf("docker network %s has no gateway address for the replication proxy", b.prefix())
	}
	return net.JoinHostPort(b.gateway, "0"), nil
}

// Close removes every container of the run (found by its label, so also one whose start failed
// half way), then the network.
func (b *docker) Close() error {
	return removeRun(context.Background(), b.pool, b.id)
}

// innerAddr is a node's address on the run network.
func innerAddr(container string, port int) string {
	return net.JoinHostPort(container, fmt.Sprint(port))
}
