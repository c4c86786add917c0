package cluster

import "time"

// Default images of the docker backend: the official ones. No registry is reachable on the
// project's own machines, so its tests pass the images `make images` builds offline instead.
const (
	DefaultRedisImage     = "redis:7"
	DefaultZooKeeperImage = "zookeeper:3.8"
	DefaultPostgresImage  = "postgres:16"
	DefaultMariaDBImage   = "mariadb:10.11"
	DefaultEtcdImage      = "quay.io/coreos/etcd:v3.4.23"
)

// containerData is where a container keeps its server's files.
const containerData = "/data"

// Container is how a container backend (cluster/docker) runs a server of one kind, registered
// from the kind's own file with registerKind: the kind's facts as data, and its command.
type Container struct {
	// Image is the image its containers run (a Spec field, or a fixed name).
	Image func(s Spec) string
	// Port is the server's port inside the container: its default, as the official image expects.
	Port int
	// Reuse makes Restart start the same container again, keeping its files (a sentinel's
	// config, a ZooKeeper member's or PostgreSQL's data dir) as the local backend keeps the node's
	// dir; otherwise Restart runs a fresh container (redis: empty).
	Reuse bool
	// User is who the container runs as ("": the image's).
	User string
	// Ready bounds the wait for the server to answer (0: the backend's default).
	Ready time.Duration
	// start returns the command (nil: the image's) and environment of a container's start.
	start func(e ContainerEnv, n *node, restart bool) (cmd, env []string)
}

// ContainerEnv is what a container's command needs to know of the backend that runs it.
type ContainerEnv interface {
	// Spec is the run's spec, its defaults filled in.
	Spec() Spec
	// ContainerName is the name of node's container, also its DNS name on the run network.
	ContainerName(node string) string
}

// Command returns the command (nil: the image's) and the environment of s's container at a
// start; restart says the start comes from Restart.
func (c Container) Command(e ContainerEnv, s *Server, restart bool) (cmd, env []string) {
	return c.start(e, s.n, restart)
}

// ContainerOf returns how a container backend runs servers of kind; false when it runs none.
func ContainerOf(kind Kind) (Container, bool) {
	if c := kinds[kind].container; c != nil {
		return *c, true
	}
	return Container{}, false
}

// ContainerKinds lists the kinds of server topology runs on a container backend; nil when it runs
// on the local backend only.
func ContainerKinds(topology string) []Kind { return topologyRegistry[topology].containers }
