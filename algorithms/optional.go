package algorithms

import (
	"context"
	"errors"
	"time"
)

// Pauser is implemented by Lockers that run in a process of their own: a client-pause fault
// stops the whole process (SIGSTOP) and resumes it (SIGCONT), so its heartbeat and watchdog
// threads freeze as in a real GC pause.
type Pauser interface {
	Pause() error
	Resume() error
}

// Killer is implemented by Lockers that run in a process of their own: a client-crash fault kills
// the process (SIGKILL), and the OS closes its connections.
type Killer interface {
	Kill() error
}

// ClockSetter is implemented by Lockers that keep their own clock, out of the harness's reach
// through Config.Clock (a process client: its runtime reads the OS clock). A clock-skew fault
// moves it as it moves Config.Clock: offset ahead (negative: behind) of the real clock, running at
// rate. An error says the clock could not be moved: the fault did not reach the client.
type ClockSetter interface {
	SetClock(offset time.Duration, rate float64) error
}

// Starter is implemented by Lockers whose construction only begins a slow start (a process
// client's runtime, such as a JVM): the harness builds every client first, then waits for each to
// be Ready, so they start side by side rather than one after another.
type Starter interface {
	Ready(ctx context.Context) error
}

// ErrBroken is wrapped by the errors of a client that broke the contract (a process client that
// exited, printed garbage or went silent). The harness stops the run on it: nothing the client
// says afterwards can be trusted, and the history so far is kept.
var ErrBroken = errors.New("lockchaos: client broke the protocol")
