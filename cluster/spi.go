package cluster

import (
	"context"
	"fmt"
	"io"
	"time"
)

// The backend SPI: what a backend in a package of its own (cluster/docker) implements and
// registers with RegisterBackend, so that cluster never imports it (cluster/docker,
// cluster/external). The local backend lives in this package: its machines are Machines, and it
// implements the unexported backend interface (backend.go), to which a registered Backend is
// adapted here. What a backend can do beyond Backend is in spi_abilities.go.

// Backend is one way of running servers, as a backend package implements it.
type Backend interface {
	// Name is the Spec.Backend it implements.
	Name() string
	// Ports is how many free host ports a node of kind needs (the first is its client port).
	Ports(kind Kind) int
	// Machine makes what runs s's server, and calls s.SetAddrs.
	Machine(s *Server) Machine
	// ReplicationListen is where the replication proxy listens, so that the replica reaches it.
	ReplicationListen() (string, error)
	// RunID names the run (etcd's cluster token).
	RunID() string
	// Close frees what the run holds once its nodes are closed (the containers, the network).
	Close() error
}

// Machine runs one node's server. The node's lock is held around every call.
type Machine interface {
	// Start starts the server without waiting for it to be ready; restart says it comes from
	// Restart. A port taken meanwhile is an error wrapping ErrAddrInUse.
	Start(ctx context.Context, restart bool) error
	// Dead returns an error once the server is known to have exited: waiting for it to become
	// ready is pointless. try counts the readiness checks, last is the latest one's error.
	Dead(ctx context.Context, try int, last error) error
	// Exited is closed when the server exits, if the backend learns it at once (else nil).
	Exited() <-chan struct{}
	// Failed stops a server that did not become ready, and returns err with what its log says.
	Failed(err error) error
	// Watch reports the server's death by itself to Server.Report from now on.
	Watch()
	// Stop kills the server (SIGKILL) and waits until it is gone; no report.
	Stop()
	// Release is the machine's part of Close.
	Release()
	// Running says the server was started (it may have died since).
	Running() bool
	// Pause freezes (on) or continues the server.
	Pause(on bool) error
	// SaveLog writes the server's output so far, its last SavedLogMax bytes at most, to w; false
	// when the backend keeps none.
	SaveLog(w io.Writer) (bool, error)
}

// Server is a node as a backend sees it: its name and kind, the host ports picked for it, and what
// its topology asks of the backend. A Machine may keep it for the node's life.
type Server struct{ n *node }

// Name is the node's name ("redis-1").
func (s *Server) Name() string { return s.n.Name }

// Kind is the kind of server the node runs.
func (s *Server) Kind() Kind { return s.n.Kind }

// Ports are the free host ports picked for the node, Backend.Ports(Kind()) of them.
func (s *Server) Ports() []int { return s.n.ports }

// Addr is where the harness reaches the server (set by SetAddrs).
func (s *Server) Addr() string { return s.n.Addr }

// Keep makes Restart start the same container again, beyond what its kind's Container.Reuse says
// (a Redis Cluster node keeps nodes.conf, its identity in the cluster).
func (s *Server) Keep() bool { return s.n.srv.keep }

// GatewayPorts are container ports to publish, besides the client port, on the run network's
// gateway at the node's further host ports (Ports()[1:]): where the other containers reach what
// the node announces (a Redis Cluster node's bus).
func (s *Server) GatewayPorts() []int { return s.n.srv.gatewayPorts }

// SetAddrs sets where the harness reaches the server (addr), where other nodes reach it (inner),
// and how long Start waits for it to become ready.
func (s *Server) SetAddrs(addr, inner string, ready time.Duration) {
	s.n.Addr, s.n.inner, s.n.readyTimeout = addr, inner, ready
}

// Report receives one line saying how (e.g. "redis-2 (127.0.0.1:4100) exited by itself: signal:
// killed") and the log's tail when the server dies by itself; nil when nobody listens (no
// Spec.Log, no Spec.OnExit).
func (s *Server) Report() func(line, tail string) { return s.n.report }

// Prepare is a registered backend's part of Start, before any attempt: it fills spec's defaults
// (images) and checks what the backend needs (the daemon, the images), and returns the spec and
// how to open the backend of one attempt. Its errors wrap ErrMissingBinary or ErrBadSpec when the
// fix is on the caller's side.
type Prepare func(ctx context.Context, spec Spec) (Spec, func(context.Context) (Backend, error), error)

type registeredBackend struct {
	prepare      Prepare
	requirements func() []Requirement
}

var backendRegistry = map[string]registeredBackend{}

// RegisterBackend makes Spec.Backend name start through prepare, and Requirements(name) list
// requirements(); call it from the backend package's init. It panics on a second registration.
func RegisterBackend(name string, prepare Prepare, requirements func() []Requirement) {
	if _, dup := backendRegistry[name]; dup || name == Local {
		panic("cluster: duplicate backend " + name)
	}
	backendRegistry[name] = registeredBackend{prepare, requirements}
}

// backendPackages names the package that registers each backend kept outside this one, for the
// error of a Start that did not import it.
var backendPackages = map[string]string{
	Docker:   "github.com/lockchaos/lockchaos/cluster/docker",
	External: "github.com/lockchaos/lockchaos/cluster/external",
}

// notLinked is the one-line error for a known backend whose package the program did not import.
func notLinked(name string) error {
	return fmt.Errorf("%w: backend %s is not linked into this program (import _ %q)", ErrBadSpec, name, backendPackages[name])
}

// spiBackend adapts a registered Backend to the core's backend. The core finds the Backend's
// extra abilities (spi_abilities.go) on a.b, through topo.spi.
type spiBackend struct{ b Backend }

func (a spiBackend) name() string                       { return a.b.Name() }
func (a spiBackend) ports(k Kind) int                   { return a.b.Ports(k) }
func (a spiBackend) machine(n *node) Machine            { return a.b.Machine(&Server{n}) }
func (a spiBackend) replicationListen() (string, error) { return a.b.ReplicationListen() }
func (a spiBackend) runID() string                      { return a.b.RunID() }
func (a spiBackend) close() error                       { return a.b.Close() }

// NewServer makes the handle of a node that belongs to no cluster, with the empty server
// description of its kind (no replication, no ensemble, no report): for a backend's own tests of
// its Machine.
func NewServer(name string, kind Kind, ports []int) *Server {
	return &Server{&node{Node: Node{Name: name, Kind: kind}, ports: ports}}
}
