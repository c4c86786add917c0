package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// latency slows a client's links ("latency"): every request and reply delayed by Amount (+Jitter),
// or, aimed at the wire, one reply held until another client holds the lock. It acts on every
// topology (aimed at the wire, only where the wire is parsed).
type latency struct{}

func init() { Register(latency{}) }

func (latency) Available(t cluster.Topology) string { return everywhere(t) }

func (latency) Name() string { return "latency" }

func (latency) onLinks() {}

func (latency) Describe(t Target) string {
	return fmt.Sprintf("latency %s ± %s", t.Amount, t.Jitter)
}

func (latency) validate(s Spec) error {
	if !s.Amount.positive() {
		return errors.New("fault latency: amount must be > 0 (e.g. amount: 300ms)")
	}
	return nil
}

func (latency) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	attrs := map[string]any{"latency": t.Amount.D().Milliseconds(), "jitter": t.Jitter.D().Milliseconds()}
	stream := t.Stream
	if stream == "" {
		stream = "downstream" // one delay per request/response round trip
	}
	return addToxic(ctx, env, t, "latency", attrs, stream)
}

func (latency) needs(Spec) []cluster.Control { return linkNeed }

func (latency) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnNetwork, false) }
