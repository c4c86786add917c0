package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
)

// Client faults act on the harness's clients. A paused or crashed process is silent to the outside:
// so besides holding the client at its point, the fault black-holes all of the client's links, and
// a ZooKeeper session's heartbeats stop as they would for a stopped JVM.

type clientPause struct{}
type clientCrash struct{}
type clockSkew struct{}
type slowRelease struct{}
type clientStall struct{}

func init() {
	Register(clientStall{})
	Register(clientPause{})
	Register(clientCrash{})
	Register(clockSkew{})
	Register(slowRelease{})
}

func (clientPause) Available(t cluster.Topology) string { return everywhere(t) }
func (clientPause) Name() string                        { return "client-pause" }
func (clientPause) Blocks() bool                        { return true }
func (clientPause) needsPoint()                         {}
func (clientPause) targetsClients()                     {}
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

// pauseProcesses stops (SIGSTOP) the clients that run in a process of their own
// (algorithms.Pauser) and returns the heal that resumes them; nil when none does.
func pauseProcesses(env Env, clients []int) (Heal, error) {
	var paused []algorithms.Pauser
	resume := func(context.Context) error {
		var errs []error
		for _, p := range paused {
			errs = append(errs, p.Resume())
		}
		return errors.Join(errs...)
	}
	for _, c := range clients {
		if p, ok := lockerOf(env, c).(algorithms.Pauser); ok {
			if err := p.Pause(); err != nil {
				return resume, fmt.Errorf("pause client %d's process: %w", c, err)
			}
			paused = append(paused, p)
		}
	}
	if len(paused) == 0 {
		return nil, nil
	}
	return resume, nil
}

func (clientStall) Available(t cluster.Topology) string { return everywhere(t) }
func (clientStall) Name() string                        { return "client-stall" }
func (clientStall) Blocks() bool                        { return true }
func (clientStall) needsPoint()                         {}
func (clientStall) targetsClients()                     {}
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

func (clientCrash) Available(t cluster.Topology) string { return everywhere(t) }
func (clientCrash) Name() string                        { return "client-crash" }
func (clientCrash) Blocks() bool                        { return true }
func (clientCrash) Forever() bool                       { return true }
func (clientCrash) needsPoint()                         {}
func (clientCrash) targetsClients()                     {}

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

// LockerEnv is an Env that hands out a client's Locker, so client faults can act on a client that
// runs in a process of its own (algorithms.Pauser, algorithms.Killer).
type LockerEnv interface {
	Locker(c int) algorithms.Locker
}

func lockerOf(env Env, c int) algorithms.Locker {
	if le, ok := env.(LockerEnv); ok {
		return le.Locker(c)
	}
	return nil
}

// silence puts toxic on every link of the client: the hold of a pause, or a crash's black hole.
// Its heal waits resumeSettle after removing the toxics: toxiproxy closes a connection whose
// timeout toxic is removed (it dropped data, so the stream may be corrupt), and a client resumed
// at once would send its next command on that connection before the close reaches its socket and
// get EOF (setnx × client-pause's release was lost so in 1 of 20 runs when pauses black-holed).
func silence(ctx context.Context, env Env, t Target, toxic string, attrs map[string]any) (Heal, error) {
	t.Nodes = nil // every link of the client
	heal, err := addToxic(ctx, env, t, toxic, attrs, "both")
	if err != nil {
		return nil, fmt.Errorf("silence the client's links: %w", err)
	}
	return func(ctx context.Context) error {
		err := heal(ctx)
		select {
		case <-time.After(resumeSettle):
		case <-ctx.Done():
		}
		return err
	}, nil
}

// resumeSettle is how long a silenced client's heal waits for toxiproxy's closes to arrive.
const resumeSettle = 20 * time.Millisecond

func (clockSkew) Available(t cluster.Topology) string { return everywhere(t) }
func (clockSkew) Name() string                        { return "clock-skew" }
func (clockSkew) targetsClients()                     {}

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

func (slowRelease) Available(t cluster.Topology) string { return everywhere(t) }
func (slowRelease) Name() string                        { return "slow-release" }
func (slowRelease) needsPoint()                         {}
func (slowRelease) targetsClients()                     {}

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
