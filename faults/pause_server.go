package faults

import (
	"context"
	"errors"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// pauseServer stops a node (SIGSTOP: a VM or GC stall) for For, then resumes it ("pause-server"). It
// acts where the topology's servers can be paused (cluster.TraitPause).
type pauseServer struct{}

func init() { Register(pauseServer{}) }

func (pauseServer) Available(t cluster.Topology) string { return t.Lacks(cluster.TraitPause) }

func (pauseServer) Name() string { return "pause-server" }

// Inject stops the nodes with SIGSTOP; the heal continues them.
func (pauseServer) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	if err := needNodes("pause-server", t); err != nil {
		return nil, err
	}
	var errs []error
	for _, n := range t.Nodes {
		errs = append(errs, env.Cluster().Pause(ctx, n))
	}
	return func(ctx context.Context) error {
		var errs []error
		for _, n := range t.Nodes {
			errs = append(errs, env.Cluster().Resume(ctx, n))
		}
		return errors.Join(errs...)
	}, errors.Join(errs...)
}

func (pauseServer) needs(Spec) []cluster.Control { return []cluster.Control{cluster.ControlPause} }

func (pauseServer) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnServers, false) }
