package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// slowRelease delays the releasing client's replies ("slow-release") by Amount from its point on: a
// release that arrives, or is answered, after the lease it releases ended. It acts on every topology
// (its wire-aimed variants only where the wire is parsed).
type slowRelease struct{}

func init() { Register(slowRelease{}) }

func (slowRelease) Available(t cluster.Topology) string { return everywhere(t) }

func (slowRelease) Name() string { return "slow-release" }

func (slowRelease) needsPoint() {}

func (slowRelease) targetsClients() {}

func (slowRelease) Describe(t Target) string {
	return fmt.Sprintf("latency %s on the releasing client's links", t.Amount)
}

func (slowRelease) validate(s Spec) error {
	if !s.Amount.positive() {
		return errors.New("fault slow-release: amount must be > 0 (the delay, more than the TTL)")
	}
	return nil
}

// Inject delays every reply to the releasing client by Amount, from the point on.
func (slowRelease) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	t.Nodes = nil
	attrs := map[string]any{"latency": t.Amount.D().Milliseconds(), "jitter": 0}
	return addToxic(ctx, env, t, "latency", attrs, "upstream")
}

func (slowRelease) needs(Spec) []cluster.Control { return linkNeed }

// slow-release delays what the releasing client sends (latency on its links, or its request
// held on the wire).
func (slowRelease) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnNetwork, false) }
