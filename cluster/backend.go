package cluster

import (
	"context"
	"io"
	"syscall"
	"time"
)

// The cluster is two layers (DESIGN.md §1, §3):
//
//	topo (topo.go, endpoints.go, control.go; topology.go, the registry that each topology's
//	  file, redis.go, sentinel.go, zookeeper.go, etcd.go, ..., adds itself to)
//	  which servers, their config, the proxies, endpoints, links, master and leader lookup
//	   │
//	   ▼
//	backend (local*.go: child processes; docker*.go: containers)
//	  where a node is reached, and how its server is started, killed, paused and logged
//
// A backend knows no topology: it turns a node's kind and server description into a process or
// a container.

// backend is one way of running servers.
type backend interface {
	// name is the Spec.Backend it implements.
	name() string
	// ports is how many free host ports a node of kind needs (the first is its client port).
	ports(kind Kind) int
	// machine makes what runs n's server, and sets n.Addr (where the harness reaches it), n.inner
	// (where other nodes reach it) and n.readyTimeout from n.Kind and n.ports.
	machine(n *node) machine
	// replicationListen is where the replication proxy listens, so that the replica reaches it.
	replicationListen() (string, error)
	// runID names the run (etcd's cluster token).
	runID() string
	// close frees what the run holds once its nodes are closed: the run dir, the containers.
	close() error
	// remoteLinks makes the run's proxies on toxiproxy-servers next to the nodes, when the
	// backend's client links are there (external); nil: they are the harness's embedded proxies.
	remoteLinks() *remoteProxies
	// control runs a process fault ("kill", "restart", "pause", "resume") on n the backend's own
	// way (external: the cluster file's commands); false: the node does it through its machine.
	control(ctx context.Context, n *node, ctl string) (bool, error)
	// restore brings back what the run's process faults left killed or paused, before Close
	// removes the run's data (external: the servers are someone else's); nothing for backends
	// whose Close stops every server anyway.
	restore(ctx context.Context) error
}

// machine runs one node's server. The node's lock is held around every call.
type machine interface {
	// start starts the server (without waiting for it to be ready); restart as in node.restarted.
	start(ctx context.Context, restart bool) error
	// dead returns an error once the server is known to have exited: waiting for it to become
	// ready is pointless. try counts the readiness checks, last is the latest one's error.
	dead(ctx context.Context, try int, last error) error
	// exited is closed when the server exits, if the backend learns it at once (else nil).
	exited() <-chan struct{}
	// failed stops a server that did not become ready, and returns err with what its log says.
	failed(err error) error
	// watch reports the server's death by itself to node.report from now on.
	watch()
	// stop kills the server (SIGKILL) and waits until it is gone; no report.
	stop()
	// release is the machine's part of Close.
	release()
	// running says the server was started (it may have died since).
	running() bool
	// pause freezes (on) or continues the server.
	pause(on bool) error
	// saveLog writes the server's output so far, its last savedLogMax bytes at most, to w; false
	// when the backend keeps none (external: someone else's server).
	saveLog(w io.Writer) (bool, error)
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
}
