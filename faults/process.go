package faults

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockchaos/lockchaos/cluster"
	"sync/atomic"
)

var toxicSeq atomic.Int64

// Process faults act on server processes (docker: containers) through the cluster.

type kill struct{}
type restart struct{}
type pauseServer struct{}

func init() {
	Register(kill{})
	Register(restart{})
	Register(pauseServer{})
}

func needNodes(kind string, t Target) error {
	if len(t.Nodes) == 0 {
		return fmt.Errorf("%s needs nodes (e.g. nodes: master)", kind)
	}
	return nil
}

func (kill) Available(t cluster.Topology) string { return t.Lacks(cluster.TraitKill) }
func (kill) Name() string                        { return "kill" }

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

func (restart) Available(t cluster.Topology) string { return t.Lacks(cluster.TraitRestart) }
func (restart) Name() string                        { return "restart" }

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

func (pauseServer) Available(t cluster.Topology) string { return t.Lacks(cluster.TraitPause) }
func (pauseServer) Name() string                        { return "pause-server" }

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
