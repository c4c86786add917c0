package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// clientPause is a GC pause or a SIGSTOP of one client ("client-pause"): the nemesis holds the client
// at its point for For, its links are silent meanwhile (bytes held, connections open), and a process
// client is stopped whole. It is the fault that outlives a lease: Kleppmann's paused holder that
// wakes up and writes. It acts on every topology.
type clientPause struct{}

func init() { Register(clientPause{}) }

func (clientPause) Available(t cluster.Topology) string { return everywhere(t) }

func (clientPause) Name() string { return "client-pause" }

func (clientPause) Blocks() bool { return true }

func (clientPause) needsPoint() {}

func (clientPause) targetsClients() {}

func (clientPause) validate(s Spec) error {
	if !s.For.positive() {
		return errors.New("fault client-pause: for must be > 0 (e.g. for: 1.2s, more than the TTL)")
	}
	return nil
}

func (clientPause) Describe(t Target) string { return fmt.Sprintf("paused %s at %s", t.For, t.Point) }

// Inject holds the paused client's links, as a stopped process's look from outside
// (docs/design.md#faults): nothing it would send arrives, what is sent to it waits, and its connections stay open —
// its kernel keeps them, and a session the server does not expire meanwhile survives the pause
// (a session lock stays held). At the heal everything held is delivered in order. The nemesis
// holds the client at its point. A client in a process of its own (algorithms.Pauser) is also
// stopped whole (SIGSTOP) until the heal.
func (clientPause) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	heal, err := silence(ctx, env, t, cluster.HoldToxic, nil)
	if err != nil {
		return nil, err
	}
	resume, err := pauseProcesses(env, t.Clients)
	if resume == nil {
		return heal, err
	}
	return func(ctx context.Context) error { return errors.Join(resume(ctx), heal(ctx)) }, err
}

func (clientPause) needs(Spec) []cluster.Control { return linkNeed }

func (clientPause) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnProcess, false) }
