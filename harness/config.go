// Package harness runs one experiment: it starts the cluster, runs the clients' acquire → critical
// section → release loop against an algorithm, fires the fault schedule, and records the history.
// It decides no verdicts.
package harness

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/lcerr"
)

// ErrBadConfig is wrapped by every configuration error (the CLI exits 254 on it).
var ErrBadConfig = lcerr.New("bad configuration")

// Workload is what the clients do.
type Workload struct {
	// Clients is the number of concurrent clients (default 5).
	Clients int
	// TTL is the lock's lease (default 1s).
	TTL time.Duration
	// Hold is how long a client keeps the lock between its read and its write (default 10ms).
	Hold time.Duration
	// Think is the most a client waits between release and its next acquire (default 5ms;
	// each wait is drawn from the client's seeded random source).
	Think time.Duration
	// AcquireTimeout bounds one Acquire call (default 2×TTL, at least 1s).
	AcquireTimeout time.Duration
	// ReleaseTimeout bounds one Release call (default AcquireTimeout). A scenario that stops the
	// releasing client for longer than its acquires may wait sets it apart: a client woken past
	// it finds its context ended and gives its release up.
	ReleaseTimeout time.Duration
	// Fencing makes the resource reject writes whose fence is below the highest seen.
	Fencing bool
	// SessionTimeout is ZooKeeper's session timeout (default TTL).
	SessionTimeout time.Duration
	// OpTimeout bounds one request to a server (default algorithms.DefaultOpTimeout(TTL)).
	OpTimeout time.Duration
	// LockPerClient gives each client its own lock name, "lock-<client>", instead of the one
	// shared "lock": clients never wait for each other, so a run measures the lock's command rate
	// (the throughput benchmarks). The clients still share the one counter, so such a history is
	// for counting, not for the checker.
	LockPerClient bool
	// NoWait runs the loop with no hold and no think time (Hold and Think are ignored; their zero
	// value means the default).
	NoWait bool
	// NoHold and NoThink make Hold, or Think, zero (a zero Hold or Think means the default): a
	// scenario file's "hold: 0s" and "think: 0s".
	NoHold, NoThink bool
	// ServerIdleTimeout, when set, makes the SQL servers end a session idle that long
	// (cluster.Spec.SessionIdleTimeout).
	ServerIdleTimeout time.Duration
}

// Proxy modes (docs/design.md#topologies-and-backends): auto puts proxies only on runs whose scenario may fault links.
const (
	ProxyAuto   = "auto"
	ProxyAlways = "always"
	ProxyNever  = "never"
)

// Config is one run.
type Config struct {
	// Lock is the lock under test, as a value: its Info (locktest hands a user's factory down
	// so, registered nowhere). When its New is nil the lock is the registered algorithm named
	// Algorithm.
	Lock      algorithms.Info
	Algorithm string
	Scenario  string
	// Expected is the catalogue's expected verdict, recorded in the history's meta.
	Expected string
	// Topology defaults to the algorithm's first topology; Nodes to the topology's default.
	Topology string
	Nodes    int
	Backend  string // local (default), docker, external
	Proxies  string // auto (default), always, never
	Workload
	Faults []faults.Spec
	// Duration is the fault phase: clients run and faults fire. Then every fault is healed and
	// clients run on for the liveness window, StuckAfter + TTL.
	Duration time.Duration
	// StuckAfter is how long without any grant, after faults healed, makes a run stuck
	// (default max(2×TTL, 1s)).
	StuckAfter time.Duration
	// Tail is how long clients run on after every fault healed (default StuckAfter + TTL, so a
	// lock left by a crashed holder can expire and a stuck lock can show).
	Tail time.Duration
	Seed int64
	// Dir is the run directory; history.jsonl is written there.
	Dir string
	// Command is the command line that re-runs this cell (kept in the history's meta).
	Command string
	// Version is lockchaos's version, for the meta line.
	Version string
	// Log receives progress and server output worth keeping (may be nil).
	Log io.Writer
	// ClusterFile is the external backend's cluster file (cluster.LoadExternal): its nodes decide
	// the topology, and every fault must find its control there.
	ClusterFile string
	// Decide, when set, is asked about the history so far while the fault phase goes on (every
	// 200 ms): a verdict says it can no longer change, and the run ends early with a stop line
	// giving the verdict and why, after a short tail. The harness decides no verdict itself: the
	// runner's Decide is the checker's (checker.Decided).
	Decide func(*history.History) (verdict, why string)
	// RedisImage, ZooKeeperImage, PostgresImage, MariaDBImage and EtcdImage are the docker
	// backend's images (default: cluster's).
	RedisImage, ZooKeeperImage, PostgresImage, MariaDBImage, EtcdImage string

	external   *cluster.ExternalFile // the loaded ClusterFile
	lockPrefix string                // external: "lockchaos-<run id>-", before every lock name
}

func (c Config) withDefaults() (Config, algorithms.Info, error) {
	info := c.Lock
	if info.New == nil {
		var err error
		if info, err = algorithms.Lookup(c.Algorithm); err != nil {
			return c, info, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
	}
	if c.Algorithm == "" {
		c.Algorithm = info.Name
	}
	if len(info.Topologies) == 0 {
		return c, info, fmt.Errorf("%w: algorithm %s lists no topology it runs on", ErrBadConfig, c.Algorithm)
	}
	if c.Backend == cluster.External {
		if err := c.loadExternal(info); err != nil {
			if errors.Is(err, cluster.ErrBadSpec) {
				return c, info, err // already says it is the cluster file's fault
			}
			return c, info, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
	} else if c.ClusterFile != "" {
		return c, info, fmt.Errorf("%w: --cluster is for --backend external (add --backend external)", ErrBadConfig)
	}
	if c.Topology == "" {
		c.Topology = info.Topologies[0]
	}
	supported := false
	for _, t := range info.Topologies {
		supported = supported || t == c.Topology
	}
	if !supported {
		return c, info, fmt.Errorf("%w: algorithm %s does not run on topology %s (it runs on %v)", ErrBadConfig, c.Algorithm, c.Topology, info.Topologies)
	}
	if info.FenceUnchecked {
		// The fence-unchecked mutant: its fences are real, its resource does not look at them.
		c.Fencing = false
	}
	if c.Backend == "" {
		c.Backend = cluster.Local
	}
	if c.Proxies == "" {
		c.Proxies = ProxyAuto
	}
	if c.Clients == 0 {
		c.Clients = 5
	}
	if c.TTL == 0 {
		c.TTL = time.Second
	}
	if c.Hold == 0 {
		c.Hold = 10 * time.Millisecond
	}
	if c.Think == 0 {
		c.Think = 5 * time.Millisecond
	}
	if c.NoWait || c.NoHold {
		c.Hold = 0
	}
	if c.NoWait || c.NoThink {
		c.Think = 0
	}
	if c.AcquireTimeout == 0 {
		c.AcquireTimeout = max(2*c.TTL, time.Second)
	}
	if c.ReleaseTimeout == 0 {
		c.ReleaseTimeout = c.AcquireTimeout
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = algorithms.DefaultOpTimeout(c.TTL)
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = c.TTL
	}
	if c.Duration == 0 {
		c.Duration = 5 * time.Second
	}
	if c.StuckAfter == 0 {
		c.StuckAfter = max(2*c.TTL, time.Second)
	}
	if c.Tail == 0 && len(c.Faults) > 0 {
		// Without faults there is nothing to heal from: the fault phase is the whole run, and
		// its stalls are judged as they are.
		c.Tail = c.StuckAfter + c.TTL
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"acquire timeout", c.AcquireTimeout}, {"release timeout", c.ReleaseTimeout}, {"op timeout", c.OpTimeout},
		{"session timeout", c.SessionTimeout}, {"stuck-after", c.StuckAfter}, {"tail", c.Tail}} {
		if d.v < 0 {
			return c, info, fmt.Errorf("%w: %s %v is negative: give a positive duration, or none for the default", ErrBadConfig, d.name, d.v)
		}
	}
	switch {
	case c.Clients < 1:
		return c, info, fmt.Errorf("%w: clients must be at least 1 (got %d)", ErrBadConfig, c.Clients)
	case c.TTL < 0 || c.Hold < 0 || c.Think < 0 || c.Duration < 0:
		return c, info, fmt.Errorf("%w: durations must not be negative", ErrBadConfig)
	case c.Dir == "":
		return c, info, fmt.Errorf("%w: no run directory", ErrBadConfig)
	}
	switch c.Proxies {
	case ProxyAuto, ProxyAlways, ProxyNever:
	default:
		return c, info, fmt.Errorf("%w: --proxy %q: want auto, always or never", ErrBadConfig, c.Proxies)
	}
	for i, f := range c.Faults {
		if err := f.Validate(); err != nil {
			return c, info, fmt.Errorf("%w: fault %d: %w", ErrBadConfig, i+1, err)
		}
	}
	if c.Proxies == ProxyNever && len(c.Faults) > 0 {
		return c, info, fmt.Errorf("%w: --proxy never cannot run a scenario with faults (they act on the proxies); use --proxy auto", ErrBadConfig)
	}
	return c, info, nil
}
