package faults

import (
	"context"
	"errors"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// restart kills a node and starts it again empty where it keeps nothing on disk ("restart"), at once
// or after For: a Redis without persistence forgets its keys. It acts where the topology's servers
// can be restarted (cluster.TraitRestart).
type restart struct{}

func init() { Register(restart{}) }

func (restart) Available(t cluster.Topology) string { return t.Lacks(cluster.TraitRestart) }

func (restart) Name() string { return "restart" }

// WithinLease: where the lease is a key's TTL (cluster.TraitKeyExpiry), the server must come back,
// empty, while the holder's lease still runs; one that came back later forgot nothing anyone
// still held.
func (restart) WithinLease() bool { return true }

// Inject kills the nodes and starts them again empty (no persistence), as a node that lost its
// unsynced state does. With For set, the nodes stay down that long first.
func (restart) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	if err := needNodes("restart", t); err != nil {
		return nil, err
	}
	var errs []error
	for _, n := range t.Nodes {
		if t.For.D() > 0 {
			errs = append(errs, env.Cluster().Kill(ctx, n))
		} else {
			errs = append(errs, env.Cluster().Restart(ctx, n))
		}
	}
	if t.For.D() == 0 {
		return nil, errors.Join(errs...)
	}
	return func(ctx context.Context) error {
		var errs []error
		for _, n := range t.Nodes {
			errs = append(errs, env.Cluster().Restart(ctx, n))
		}
		return errors.Join(errs...)
	}, errors.Join(errs...)
}

func (restart) needs(s Spec) []cluster.Control {
	if !s.For.IsZero() {
		return []cluster.Control{cluster.ControlKill, cluster.ControlRestart}
	}
	return []cluster.Control{cluster.ControlRestart}
}

// A restart brings the node back (empty); one with For is a kill healed by the restart.
func (restart) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnServers, false) }
