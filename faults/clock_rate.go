package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// clockRate makes clients' clocks run fast or slow ("clock-rate"): from the moment it fires (at a
// point: the holder's grant), the target clients' clocks run at Rate× real time, until the heal puts
// them right. It is the "skew rate" client-go's leader election says it does not tolerate: a lease
// holder that times its lease by its own clock trusts, when its clock runs slow, a lease that has
// run out. It reaches the locks whose clock the harness owns (Config.Clock); a lock whose clock it
// cannot move says so (algorithms.Info.Unreached: client-go's elector, a process client, whose
// libfaketime counts a rate from the process's start). It acts on every topology.
type clockRate struct{}

func init() { Register(clockRate{}) }

func (clockRate) Available(t cluster.Topology) string { return everywhere(t) }

func (clockRate) Name() string { return "clock-rate" }

func (clockRate) targetsClients() {}

func (clockRate) Describe(t Target) string {
	return fmt.Sprintf("clock runs at %g× real time", t.Rate)
}

func (clockRate) validate(s Spec) error {
	if s.Rate <= 0 || s.Rate == 1 {
		return errors.New("fault clock-rate: rate must be > 0 and not 1 (e.g. rate: 0.5, a clock at half speed)")
	}
	return nil
}

// Inject sets the clients' clocks running at Rate from now; the heal sets them right (real time,
// no offset), as clock-skew's heal does.
func (clockRate) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	if len(t.Clients) == 0 {
		return nil, errors.New("clock-rate needs clients (e.g. clients: trigger)")
	}
	for _, c := range t.Clients {
		env.SetClock(c, 0, t.Rate)
	}
	return func(context.Context) error {
		for _, c := range t.Clients {
			env.SetClock(c, 0, 1)
		}
		return nil
	}, nil
}

// clock-rate needs nothing of the cluster: it moves the clients' clocks, which the harness owns.
func (clockRate) needs(Spec) []cluster.Control { return nil }

func (clockRate) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnClock, false) }
