// Package cluster starts, stops and addresses the real servers a run needs, each client link behind
// its own embedded toxiproxy proxy. It knows nothing about locks.
package cluster

import (
	"context"
	"io"
	"net"
	"time"

	toxiproxy "github.com/lockchaos/lockchaos/third_party/toxiproxy"
)

// Topologies (docs/design.md#topologies-and-backends). Each registers itself from its own file (registerTopology): redis.go,
// sentinel.go, zookeeper.go.
const (
	RedisSingle   = "redis-single"   // one redis-server
	RedisMulti    = "redis-multi"    // N independent masters (Redlock)
	RedisSentinel = "redis-sentinel" // master + replica (replication link proxied) + 3 sentinels
	ZooKeeper     = "zookeeper"      // 1 or 3 ZooKeeper servers
)

// Topologies lists every topology name: these four first, in the order listings have always shown
// them, then the others in the order they registered (registerTopology).
var Topologies = []string{RedisSingle, RedisMulti, RedisSentinel, ZooKeeper}

// Backends. Docker and External are in packages of their own (cluster/docker, cluster/external),
// which a program imports to start runs on them.
const (
	Local    = "local"
	Docker   = "docker"
	External = "external"
)

// Kind is what a node runs.
type Kind string

// Node kinds.
const (
	KindRedis     Kind = "redis"
	KindSentinel  Kind = "sentinel"
	KindZooKeeper Kind = "zookeeper"
)

// Spec says which cluster to start.
type Spec struct {
	Topology string
	// Nodes is the number of data nodes: redis-multi masters (default 5), zookeeper members
	// (default 3). Ignored for redis-single (1) and redis-sentinel (master + replica).
	Nodes int
	// Backend is local (default), docker or external.
	Backend string
	// Clients is how many clients will connect; with Proxies each gets its own proxy per node.
	Clients int
	// Proxies puts an embedded toxiproxy proxy on every client→node link. Without it clients
	// connect directly and link faults are refused. (The replication link of redis-sentinel is
	// always proxied: it carries no client traffic, and the failover fault needs it.)
	Proxies bool
	// Wire, with Proxies, parses the protocol of every client link to a Redis or ZooKeeper node
	// (WireTap), so faults can act at a lock's own commands (docs/design.md#wire-points). Off, the proxies
	// pass bytes without looking at them: parse only the runs whose faults need it.
	Wire bool
	// Dir is where the per-run directory is made (default os.TempDir()).
	Dir string
	// Log receives server output worth keeping (may be nil).
	Log io.Writer
	// OnExit, when set, is called once for each server that exits by itself — not stopped,
	// killed, paused or restarted by lockchaos or a fault — with the node's name and one line
	// saying how ("mariadb-1 (127.0.0.1:35049) exited by itself: signal: segmentation fault"),
	// from the goroutine that watched it. The harness ends the run then: what follows would show
	// the server's failure, not the lock's.
	OnExit func(node, line string)
	// External is the cluster file of the external backend (LoadExternal); its nodes decide the
	// topology, which must be Topology.
	External *ExternalFile
	// RunID names the external backend's proxies (default external.NewRunID()); the harness
	// also puts it in the lock's name, so that a run touches only its own keys.
	RunID string
	// LockKey is the key whose slot's master Master and the failover fault name on
	// redis-cluster (default DefaultLockKey).
	LockKey string
	// ZKTickTime is ZooKeeper's tickTime (default 200ms).
	ZKTickTime time.Duration
	// SessionIdleTimeout, when set, makes a SQL server end a client's session after it was idle
	// that long (PostgreSQL's idle_session_timeout and idle_in_transaction_session_timeout,
	// MariaDB's wait_timeout, in whole seconds rounded up): how soon a vanished or idle holder's
	// session, and its session lock, is dropped (docs/design.md#session-locks-and-more-services). Local backend only.
	SessionIdleTimeout time.Duration
	// RedisImage, ZooKeeperImage, PostgresImage, MariaDBImage and EtcdImage are the docker
	// backend's images (default redis:7, zookeeper:3.8, postgres:16, mariadb:10.11 and
	// quay.io/coreos/etcd:v3.4.23; `make images` builds lockchaos/redis, lockchaos/zookeeper,
	// lockchaos/postgres, lockchaos/mariadb and lockchaos/etcd offline).
	RedisImage     string
	ZooKeeperImage string
	PostgresImage  string
	MariaDBImage   string
	EtcdImage      string
}

// Node is one server.
type Node struct {
	Name string // "redis-1", "zk-2", "sentinel-3"
	Kind Kind
	Addr string // the server's real address (host:port), not proxied
}

// Endpoints is how one client reaches the cluster: through its own proxies when they are on.
type Endpoints struct {
	// Addrs holds one address per data node, in Nodes order (for redis-sentinel: master first
	// as started, then the replica; clients should use Sentinel instead).
	Addrs []string
	// Cluster is set for redis-cluster: Addrs are seeds of one Redis Cluster, and the cluster
	// names its nodes (redirects, CLUSTER SLOTS) by addresses that Dial maps to this client's
	// proxies.
	Cluster bool
	// MultiHost is set for postgres-standby: Addrs are one replicated database's nodes (a primary
	// and its standby), and a client lists them all and uses whichever accepts writes, as libpq's
	// multi-host connection string with target_session_attrs=read-write does.
	MultiHost bool
	// SentinelAddrs and MasterName are set for redis-sentinel.
	SentinelAddrs []string
	MasterName    string
	// SQL is how this client logs in to a SQL topology's server (nil for the others; the
	// harness's own login for the direct endpoints).
	SQL *SQLLogin
	// Kube is set for kubernetes: the token and CA a client builds its client-go rest.Config
	// with, Addrs[0] (https) being its way to the apiserver.
	Kube *KubeAccess
	// Dial maps a data node's real address (as Sentinel reports it) to this client's proxy for
	// it; nil when proxies are off.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Routes is the map Dial applies: a node's address as the other servers name it → this
	// client's way in. For a client that dials by itself (a process client, told it in init);
	// nil when Dial is nil. Read-only: Endpoints' callers share it.
	Routes map[string]string
}

// Cluster is a running set of servers. Every method is safe for concurrent use.
type Cluster interface {
	// Topology returns the spec's topology.
	Topology() string
	// Nodes lists the data nodes (redis masters/replica, zookeeper members), then sentinels.
	Nodes() []Node
	// Endpoints returns client c's way in (c from 1 to Spec.Clients).
	Endpoints(c int) Endpoints
	// Link returns the proxy between client c and the named node; an error when proxies are off
	// or on the external backend, whose proxies are on remote toxiproxy-servers (use FaultLink).
	Link(c int, node string) (*toxiproxy.Proxy, error)
	// ReplicationLink returns the proxy the replica uses to reach the master (redis-sentinel;
	// redis-cluster: the replica of the lock key's slot master; postgres-standby: the standby's
	// WAL stream from the primary).
	ReplicationLink() (*toxiproxy.Proxy, error)
	// Failover kills the named master so that the topology promotes a replica, its own way
	// (redis-sentinel: Sentinel promotes; redis-cluster: the cluster elects the replica;
	// postgres-standby: lockchaos promotes the standby once the primary is dead, as an HA manager).
	Failover(ctx context.Context, master string) error
	// FaultLink returns the link between client c and the named node as network faults act on
	// it, on every backend.
	FaultLink(c int, node string) (Link, error)
	// WireTap returns the parsed link between client c and the named node (Spec.Wire), or an
	// error wrapping ErrWireUnsupported that says why it has none.
	WireTap(c int, node string) (*WireTap, error)
	// FaultReplicationLink is ReplicationLink as network faults act on it.
	FaultReplicationLink() (Link, error)
	// Kill stops a node with SIGKILL (docker: kill the container).
	Kill(ctx context.Context, node string) error
	// Restart starts a killed node again on the same address, empty (no persistence). If the
	// node is running it is killed first.
	Restart(ctx context.Context, node string) error
	// Pause stops a node with SIGSTOP; Resume continues it.
	Pause(ctx context.Context, node string) error
	Resume(ctx context.Context, node string) error
	// Master returns the node that is master now (redis-sentinel: as Sentinel says;
	// redis-cluster: the master of the slot of Spec.LockKey; postgres-standby: the node not in
	// recovery; other redis topologies: the first node).
	Master(ctx context.Context) (string, error)
	// Leader returns the ZooKeeper leader's node name.
	Leader(ctx context.Context) (string, error)
	// SaveLogs writes each server's output so far (its last MiB) to dir/<node>.log, creating dir:
	// what the servers said during a run outlives Close. The external backend writes none.
	SaveLogs(dir string) error
	// Close stops every server and proxy and removes the run directory. It is idempotent.
	Close() error
}
