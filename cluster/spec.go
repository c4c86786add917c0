package cluster

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Defaults for Spec fields left zero.
const (
	DefaultZKTickTime = 200 * time.Millisecond
)

// normalize fills defaults and rejects specs that cannot work, naming the field and the fix.
func (s Spec) normalize() (Spec, error) {
	if !slices.Contains(Topologies, s.Topology) {
		return s, fmt.Errorf("%w: unknown topology %q (use one of %s)", ErrBadSpec, s.Topology, strings.Join(Topologies, ", "))
	}
	if s.Backend == "" {
		s.Backend = Local
	}
	if s.Clients < 0 {
		return s, fmt.Errorf("%w: clients is %d (use 1 or more)", ErrBadSpec, s.Clients)
	}
	if s.Clients == 0 {
		s.Clients = 1
	}
	if s.Nodes < 0 {
		return s, fmt.Errorf("%w: nodes is %d (use 1 or more, or 0 for the default)", ErrBadSpec, s.Nodes)
	}
	if s.SessionIdleTimeout != 0 {
		switch {
		case !topologyRegistry[s.Topology].idleTimeout:
			return s, fmt.Errorf("%w: a session idle timeout on topology %s: its servers have no sessions to time out (leave server_idle_timeout out)", ErrBadSpec, s.Topology)
		case s.Backend == External:
			return s, fmt.Errorf("%w: a session idle timeout on the external backend: its servers' settings are their owner's (leave server_idle_timeout out)", ErrBadSpec)
		case s.SessionIdleTimeout < time.Millisecond:
			return s, fmt.Errorf("%w: session idle timeout %v (use at least 1ms)", ErrBadSpec, s.SessionIdleTimeout)
		}
	}
	s, err := normalizeTopology(s)
	if err != nil {
		return s, err
	}
	if s.ZKTickTime == 0 {
		s.ZKTickTime = DefaultZKTickTime
	}
	if s.ZKTickTime < time.Millisecond {
		return s, fmt.Errorf("%w: ZooKeeper tick time %v (use at least 1ms, default 200ms)", ErrBadSpec, s.ZKTickTime)
	}
	if s.Dir == "" {
		s.Dir = os.TempDir()
	}
	if st, err := os.Stat(s.Dir); err != nil || !st.IsDir() {
		return s, fmt.Errorf("%w: run dir parent %s is not a directory (create it or pick another)", ErrBadSpec, s.Dir)
	}
	return s, nil
}
