// Package algorithms holds the lock algorithms under test, each behind the Locker interface, one
// file per algorithm registered in init. Algorithms know nothing about faults or checking.
package algorithms

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"time"
)

// Locker is a distributed lock as the harness drives it.
type Locker interface {
	// Acquire blocks until the lock is held, ctx ends, or the algorithm gives up.
	Acquire(ctx context.Context) (Lease, error)
	// Release gives the lock back. It must be safe to call with an expired lease.
	Release(ctx context.Context, l Lease) error
}

// Closer is implemented by Lockers that hold connections or sessions; the harness closes them at
// the end of a run.
type Closer interface {
	Close() error
}

// Lease is what a successful Acquire returns.
type Lease struct {
	// Fence is a fencing token, 0 if the algorithm has none.
	Fence uint64
	// Validity is how long the holder may assume it holds the lock, measured from the moment
	// Acquire was called, by the client's own clock; 0 means until released.
	Validity time.Duration
	// TTL is the lease the server enforces (0 = none), for the lease-aware check.
	TTL time.Duration
	// NoExpiry, with TTL 0, says the server holds the lock until it is released or the holder's
	// session ends (a session lock, docs/design.md#session-locks-and-more-services), so the check must not assume the run's TTL
	// for it; without it a TTL of 0 is read as the run's TTL.
	NoExpiry bool
	// Data is the algorithm's own state that Release needs (a token, a node path).
	Data any
}

// Clock is the client's view of wall-clock time. Algorithms read time only through it, so the
// harness can skew one client's clock.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// PointFunc is called by an algorithm between the steps of its acquire and release, with the
// step's name (e.g. "acquire:after-setnx"). A fault may pause the client there or crash it; an
// error (a crash, or ctx ended) must be returned by the algorithm at once.
type PointFunc func(ctx context.Context, name string) error

// NoPoint is a PointFunc that does nothing.
func NoPoint(context.Context, string) error { return nil }

// Config is what an algorithm is built from. The addresses are the client's own (proxied) links,
// one per node, so a fault can hit one client's links.
type Config struct {
	// Client is the client's number, from 1.
	Client int
	// Topology is the topology the run uses ("" when not known: the algorithm's default).
	Topology string
	// Name is the lock's name (the Redis key, the ZooKeeper path's last element).
	Name string
	// TTL is the lease the server should enforce.
	TTL time.Duration
	// Addrs are the node addresses for this client: one per Redis master, or the ZooKeeper
	// ensemble's members.
	Addrs []string
	// Cluster, when set, makes single-node Redis algorithms use a Redis Cluster client: Addrs
	// are seeds, and each key goes to its slot's master (redis-cluster). Dial must then map
	// every node's address as the cluster announces it to this client's way in.
	Cluster bool
	// MultiHost, when set, says Addrs are the nodes of one replicated PostgreSQL (a primary and its
	// standby): the PostgreSQL algorithms list them all in one connection string and connect to
	// whichever accepts writes (target_session_attrs=read-write), so they follow a failover.
	MultiHost bool
	// SQL is how the client logs in to a SQL topology's server (the cluster's Endpoints.SQL).
	SQL *SQLLogin
	// Kube is how the client reaches a kubernetes topology's apiserver besides Addrs[0], its
	// proxy to it: the bearer token and the CA (the cluster's Endpoints.Kube; KubeRESTConfig
	// makes a client-go rest.Config of them).
	Kube *KubeAccess
	// Sentinel, when set, makes single-node Redis algorithms find the master through Sentinel.
	Sentinel *SentinelConfig
	// Dial, when set, is used for every connection (it maps a server's real address, as Sentinel
	// reports it, to this client's proxy for it).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Routes is the map Dial applies (a server's address as Sentinel or a cluster names it → this
	// client's proxy for it), for a client that cannot take Dial: a process client gets it in
	// init. Read-only.
	Routes map[string]string
	// SessionTimeout is the ZooKeeper session timeout (default TTL).
	SessionTimeout time.Duration
	// OpTimeout bounds one request to a server (default DefaultOpTimeout(TTL): TTL/4, at least
	// 100 ms).
	OpTimeout time.Duration
	// RetryDelay is the pause between acquire attempts (default 10 ms; randomised where the
	// algorithm says so).
	RetryDelay time.Duration
	// Clock is the client's clock (default SystemClock).
	Clock Clock
	// ClockMoves says the run plans a fault that moves the clients' clocks (clock-skew,
	// clock-rate): a Locker whose clock the harness cannot hand it (a process client) must be
	// ready for it from its start, and need not be otherwise.
	ClockMoves bool
	// Point is the client's named-point hook (default NoPoint).
	Point PointFunc
	// Dir is the run directory, where a client may keep files of its own (a process client's
	// stderr); "" when there is none.
	Dir string
	// Rand is the client's random source, seeded from the run's seed (tokens, retry delays).
	Rand *rand.Rand
}

// SentinelConfig says how to reach Redis Sentinel.
type SentinelConfig struct {
	MasterName string
	Addrs      []string // the client's (proxied) sentinel addresses
}

// ErrNotHeld is returned by Release when the lock was no longer held by this lease (it expired and
// maybe went to another client). The release itself did no harm.
var ErrNotHeld = errors.New("lockchaos: lock not held")

// ErrGaveUp is returned by Acquire when the algorithm gave up without ctx ending (e.g. Redlock
// could not reach a quorum in time).
var ErrGaveUp = errors.New("lockchaos: acquire gave up")

// Validator is implemented by Lockers whose lease can end before its Validity says: a lease kept
// alive by a watchdog that may fail to renew it, or a ZooKeeper session that may be lost. Valid
// reports whether the holder may still assume it holds l; it must answer at once from local
// state (no request to a server) — except a session lock's (pg-advisory, docs/design.md#session-locks-and-more-services), which
// has no lease to count and asks its server, bounded by its OpTimeout. The harness's careful client asks it before its read and its
// write, in addition to checking Validity by its clock.
type Validator interface {
	Valid(l Lease) bool
}
