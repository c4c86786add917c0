package cluster

import (
	"context"
	"fmt"
)

// SessionKiller is a cluster whose servers can end a client's sessions from the server side
// (PostgreSQL's pg_terminate_backend, MariaDB's KILL): the session-kill fault (docs/design.md#session-locks-and-more-services).
// A client's sessions are the ones tagged with ClientAppName(client) (PostgreSQL's
// application_name, MariaDB's user name); the server is reached directly, never through the
// client's proxy.
type SessionKiller interface {
	// KillSessions ends every session of client c and returns how many it ended. An error
	// wrapping ErrNoSessions means the topology has no sessions to end.
	KillSessions(ctx context.Context, c int) (int, error)
}

// ErrNoSessions: the topology's servers have no sessions the harness can end.
var ErrNoSessions = fmt.Errorf("lockchaos: topology cannot end sessions")

// KillSessions implements SessionKiller for the topologies that registered a way to do it.
func (c *topo) KillSessions(ctx context.Context, client int) (int, error) {
	t, ok := topologyRegistry[c.spec.Topology]
	if !ok || t.killSessions == nil {
		return 0, fmt.Errorf("%w: %s (session-kill runs on postgres, postgres-pgbouncer, mariadb)", ErrNoSessions, c.spec.Topology)
	}
	return t.killSessions(c, ctx, client)
}

// CanKillSessions reports whether topology's servers can end a client's sessions, for the
// checks made before a run starts.
func CanKillSessions(topology string) bool {
	t, ok := topologyRegistry[topology]
	return ok && t.killSessions != nil
}
