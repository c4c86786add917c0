package faults

import (
	"context"
	"fmt"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// clientCrash is a client that dies ("client-crash"): at its point, or as a reply reaches it on the
// wire, it never runs another step; its links are silenced for good and a process client is
// SIGKILLed. A lock without expiry is never freed. It acts on every topology (aimed at the wire, only
// where the wire is parsed: faults.Unavailable).
type clientCrash struct{}

func init() { Register(clientCrash{}) }

func (clientCrash) Available(t cluster.Topology) string { return everywhere(t) }

func (clientCrash) Name() string { return "client-crash" }

func (clientCrash) Blocks() bool { return true }

func (clientCrash) Forever() bool { return true }

func (clientCrash) needsPoint() {}

func (clientCrash) targetsClients() {}

func (clientCrash) Describe(t Target) string { return "crashed at " + t.Point }

// Inject silences the client for good: its requests never arrive and its sessions expire, as the
// server sees a dead process. A client in a process of its own (algorithms.Killer) is killed.
func (clientCrash) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	heal, err := silence(ctx, env, t, "timeout", blackHole)
	if err != nil {
		return nil, err
	}
	for _, c := range t.Clients {
		if k, ok := lockerOf(env, c).(algorithms.Killer); ok {
			if err := k.Kill(); err != nil {
				return heal, fmt.Errorf("kill client %d's process: %w", c, err)
			}
		}
	}
	return heal, nil
}

func (clientCrash) needs(Spec) []cluster.Control { return linkNeed }

// A crashed client never comes back.
func (clientCrash) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnProcess, true) }
