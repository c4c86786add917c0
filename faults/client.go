package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
)

// Client faults act on the harness's clients. A paused or crashed process is silent to the outside:
// so besides holding the client at its point, the fault black-holes all of the client's links, and
// a ZooKeeper session's heartbeats stop as they would for a stopped JVM.

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
