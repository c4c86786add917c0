package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// sessionKill is the server ending clients' sessions (docs/design.md#session-locks-and-more-services): PostgreSQL's
// pg_terminate_backend, MariaDB's KILL, as an admin, a pooler or a failover does. A session lock
// (pg_advisory_lock, GET_LOCK) is dropped with its session and the next waiter is granted at
// once; the holder learns it only at its next statement. The client itself goes on: it is not
// held at its point. The topology does the killing (cluster.SessionKiller), over a connection
// of its own to the server, never through the client's proxy.
type sessionKill struct{}

func init() { Register(sessionKill{}) }

// Available: only a server with sessions the topology can end (cluster.TraitSessions).
func (sessionKill) Available(t cluster.Topology) string { return t.Lacks(cluster.TraitSessions) }

func (sessionKill) Name() string    { return "session-kill" }
func (sessionKill) targetsClients() {}

func (sessionKill) Describe(t Target) string {
	return fmt.Sprintf("the server ended the sessions of client(s) %v", t.Clients)
}

// The server dropped what the sessions held: the lock service's state, the way a restart drops
// it, for these clients only. The sessions are gone, but the clients reconnect: nothing lasts.
func (sessionKill) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnServers, false) }

// Inject ends every session of the target clients. It fails (so the fault does not count as
// fired) when it ended none: a kill that found no session put nothing at risk.
func (sessionKill) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	k, ok := env.Cluster().(cluster.SessionKiller)
	if !ok {
		return nil, fmt.Errorf("%w: the cluster has no sessions to end", cluster.ErrNoSessions)
	}
	if len(t.Clients) == 0 {
		return nil, errors.New("session-kill needs clients (e.g. clients: trigger, at a point)")
	}
	total := 0
	var errs []error
	for _, c := range t.Clients {
		n, err := k.KillSessions(ctx, c)
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("client %d: %w", c, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if total == 0 {
		return nil, fmt.Errorf("no session of client(s) %v was open on the server", t.Clients)
	}
	return nil, nil
}

// session-kill needs no control of a node: the topology ends the sessions over a connection of
// its own (cluster.SessionKiller); a topology without sessions makes the fault unfired, with the
// reason, and the run unknown.
func (sessionKill) needs(Spec) []cluster.Control { return nil }
