package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// refuse makes a node refuse a client's connections ("refuse"): the proxy is disabled, so requests
// fail at once, as a firewall's reject or a host that is down. It acts on every topology.
type refuse struct{}

func init() { Register(refuse{}) }

func (refuse) onLinks() {}

func (refuse) Available(t cluster.Topology) string { return everywhere(t) }

func (refuse) Name() string { return "refuse" }

func (refuse) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	links, err := links(env, t)
	if err != nil {
		return nil, err
	}
	heal := func(ctx context.Context) error {
		var errs []error
		for _, l := range links {
			if err := l.SetEnabled(ctx, true); err != nil {
				errs = append(errs, fmt.Errorf("re-enable %s: %w", l.Name(), err))
			}
		}
		return errors.Join(errs...)
	}
	for _, l := range links {
		if err := l.SetEnabled(ctx, false); err != nil {
			_ = heal(ctx)
			return nil, fmt.Errorf("disable %s: %w", l.Name(), err)
		}
	}
	return heal, nil
}

func (refuse) needs(Spec) []cluster.Control { return linkNeed }

func (refuse) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnNetwork, false) }
