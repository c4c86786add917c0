package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// clientStall is a holder busy past its lease ("client-stall"): the nemesis holds the client's step at
// its point for For, but its links and threads run on (a renewal goroutine keeps renewing). It acts
// on every topology.
type clientStall struct{}

func init() { Register(clientStall{}) }

func (clientStall) Available(t cluster.Topology) string { return everywhere(t) }

func (clientStall) Name() string { return "client-stall" }

func (clientStall) Blocks() bool { return true }

func (clientStall) needsPoint() {}

func (clientStall) targetsClients() {}

func (clientStall) validate(s Spec) error {
	if !s.For.positive() {
		return errors.New("fault client-stall: for must be > 0 (e.g. for: 800ms, more than the TTL)")
	}
	return nil
}

func (clientStall) Describe(t Target) string {
	return fmt.Sprintf("kept busy %s at %s", t.For, t.Point)
}

// Inject does nothing to the client's links or process: the nemesis holds the client's step at
// its point for For, while the rest of it — a lock's renewal thread, a ZooKeeper session's
// heartbeats, a process client's whole process — runs on. A slow step of the critical section (a
// long query, a loaded scheduler), not a stopped process: the holder keeps working past its lease,
// as a holder cut off by a partition does while it still believes it holds.
func (clientStall) Inject(context.Context, Env, Target) (Heal, error) { return nil, nil }

// client-stall needs nothing of the cluster: it only holds the client's step.
func (clientStall) needs(Spec) []cluster.Control { return nil }

func (clientStall) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnProcess, false) }
