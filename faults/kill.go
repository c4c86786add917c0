package faults

import (
	"context"
	"errors"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// kill kills server nodes for good ("kill"): SIGKILL of the process (docker: the container). It acts
// where the topology's servers can be killed (cluster.TraitKill; external: a kill command).
type kill struct{}

func init() { Register(kill{}) }

func (kill) Available(t cluster.Topology) string { return t.Lacks(cluster.TraitKill) }

func (kill) Name() string { return "kill" }

// Inject kills the nodes with SIGKILL, for good: a kill is not healed (use restart to come back).
func (kill) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	if err := needNodes("kill", t); err != nil {
		return nil, err
	}
	var errs []error
	for _, n := range t.Nodes {
		errs = append(errs, env.Cluster().Kill(ctx, n))
	}
	return nil, errors.Join(errs...)
}

func (kill) needs(Spec) []cluster.Control { return []cluster.Control{cluster.ControlKill} }

// A killed node stays dead for the rest of the run, whatever its (instant) end line says.
func (kill) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnServers, true) }
