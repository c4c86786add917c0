package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// clockSkew moves one client's clock ("clock-skew"): Config.Clock of an in-process lock, libfaketime's
// clock of a process client, by Amount, until the heal. A lock that times its lease by its own clock
// (a timestamp lock) breaks. It acts on every topology.
type clockSkew struct{}

func init() { Register(clockSkew{}) }

func (clockSkew) Available(t cluster.Topology) string { return everywhere(t) }

func (clockSkew) Name() string { return "clock-skew" }

func (clockSkew) targetsClients() {}

func (clockSkew) Describe(t Target) string { return fmt.Sprintf("clock offset %s", t.Amount) }

func (clockSkew) validate(s Spec) error {
	if s.Amount.IsZero() {
		return errors.New("fault clock-skew: amount must be set (e.g. amount: 2s ahead, -2s behind)")
	}
	return nil
}

// Inject moves the clients' clocks by Amount; the heal puts them back.
func (clockSkew) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	if len(t.Clients) == 0 {
		return nil, errors.New("clock-skew needs clients (e.g. clients: 2)")
	}
	for _, c := range t.Clients {
		env.SetClock(c, t.Amount.D(), 1)
	}
	return func(context.Context) error {
		for _, c := range t.Clients {
			env.SetClock(c, 0, 1)
		}
		return nil
	}, nil
}

func (clockSkew) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnClock, false) }
