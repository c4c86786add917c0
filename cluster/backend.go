package cluster

import (
	"syscall"
	"time"
)

// The cluster is two layers (docs/design.md#packages-and-arrows, §3):
//
//	topo (topo.go, endpoints.go, control.go; topology.go, the registry that each topology's
//	  file, redis.go, sentinel.go, zookeeper.go, etcd.go, ..., adds itself to)
//	  which servers, their config, the proxies, endpoints, links, master and leader lookup
//	   │
//	   ▼
//	backend (local*.go: child processes; the packages cluster/docker: containers, and
//	  cluster/external: someone else's servers, through the SPI in spi.go, its optional abilities
//	  in spi_abilities.go, the kinds' Container in container.go and the cluster file in
//	  external_file.go)
//	  where a node is reached, and how its server is started, killed, paused and logged
//
// A backend knows no topology: it turns a node's kind and server description into a process or
// a container. cluster/docker and cluster/external import cluster, never the other way: each
// registers itself (RegisterBackend) from its init.

// backend is one way of running servers, as the core drives it: the local backend implements
// it, and spiBackend adapts a registered Backend (spi.go) to it. A node's machine is a
// Machine (spi.go), whichever backend made it.
type backend interface {
	// name is the Spec.Backend it implements.
	name() string
	// ports is how many free host ports a node of kind needs (the first is its client port).
	ports(kind Kind) int
	// machine makes what runs n's server, and sets n.Addr (where the harness reaches it), n.inner
	// (where other nodes reach it) and n.readyTimeout from n.Kind and n.ports.
	machine(n *node) Machine
	// replicationListen is where the replication proxy listens, so that the replica reaches it.
	replicationListen() (string, error)
	// runID names the run (etcd's cluster token).
	runID() string
	// close frees what the run holds once its nodes are closed: the run dir, the containers.
	close() error
}

// server says what a node runs beyond its kind, as the topology decides it; each backend turns it
// into a config its way.
type server struct {
	// first holds redis config lines for the first start only (replicaof: a restart is empty);
	// conf, redis config lines for every start (a Redis Cluster node's).
	first []string
	conf  []string
	// keep makes a container's Restart start the same container again, as its kind's
	// container.reuse does (a Redis Cluster node keeps nodes.conf, its identity in the cluster).
	keep bool
	// gatewayPorts are container ports the docker backend also publishes on the run network's
	// gateway, at the node's further host ports (ports[1:]): where the other containers reach
	// what the node announces (a Redis Cluster node's bus).
	gatewayPorts []int
	// master is the node a sentinel monitors; downAfter, how long the master may go without
	// answering before this sentinel calls it down (sentinelConfig).
	master    *node
	downAfter time.Duration
	// id and ensemble are a ZooKeeper member's myid and all members (ensemble: an etcd
	// member's too), token an etcd cluster's --initial-cluster-token.
	id       int
	ensemble []*node
	token    string
	// pooled is the server a pgbouncer pools (its [databases] host).
	pooled *node
	// extra are a PostgreSQL server's flags beyond every server's (a standby's), and baseBackup
	// the address a standby's data dir is copied from at its first start (pg_basebackup).
	extra      []string
	baseBackup string
	// argv, for servers only the local backend runs (etcd), is the command given the node's dir.
	argv func(dir string) []string
	// cred, when set, runs the process as another user: PostgreSQL and pgbouncer refuse to run
	// as root (serverUser).
	cred *syscall.Credential
	// kube is a kube-apiserver's keys (its clients' Endpoints.Kube comes from them).
	kube *kubePKI
}
