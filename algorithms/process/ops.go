package process

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
)

// Acquire asks the client to take the lock within the time left on ctx.
func (l *Locker) Acquire(ctx context.Context) (algorithms.Lease, error) {
	if err := l.Ready(ctx); err != nil {
		return algorithms.Lease{}, err
	}
	dl := deadline(ctx, 2*l.cfg.TTL)
	seen := l.lost.Load()
	r, err := l.call(ctx, request{Type: TypeAcquire, TimeoutMs: max(time.Until(dl).Milliseconds(), 1)}, dl, l.spec.Grace)
	if err != nil {
		return algorithms.Lease{}, err
	}
	if r.Type != TypeOk {
		return algorithms.Lease{}, l.outcome("acquire", r, CodeTimeoutDefinite, CodeRefused)
	}
	lease := algorithms.Lease{Fence: r.Fence, TTL: l.cfg.TTL, Data: leaseData{lostSeen: seen}}
	if r.ValidityMs != nil {
		lease.Validity = time.Duration(*r.ValidityMs) * time.Millisecond
	}
	if r.TTLMs != nil {
		lease.TTL = time.Duration(*r.TTLMs) * time.Millisecond
	}
	if r.NoExpiry {
		lease.TTL, lease.NoExpiry = 0, true
	}
	return lease, nil
}

// Release asks the client to give the lock back.
func (l *Locker) Release(ctx context.Context, _ algorithms.Lease) error {
	if err := l.Ready(ctx); err != nil {
		return err
	}
	dl := deadline(ctx, 2*l.cfg.TTL)
	r, err := l.call(ctx, request{Type: TypeRelease, TimeoutMs: max(time.Until(dl).Milliseconds(), 1)}, dl, l.spec.Grace)
	if err != nil {
		return err
	}
	if r.Type == TypeOk {
		return nil
	}
	return l.outcome("release", r, CodeNotHeld, CodeTimeoutDefinite, CodeRefused)
}

// Valid reports whether the library still believes it holds the lease: false once the client
// said "lost" after the lease was granted; otherwise, when the client supports it, its answer to
// "valid". A broken client is not valid (its next call stops the run).
func (l *Locker) Valid(lease algorithms.Lease) bool {
	ctx, cancel := context.WithTimeout(context.Background(), max(l.cfg.OpTimeout, time.Second))
	defer cancel()
	lost := func() bool {
		d, ok := lease.Data.(leaseData)
		return ok && l.lost.Load() > d.lostSeen
	}
	if lost() || !l.spec.Valid {
		return !lost()
	}
	dl := deadline(ctx, max(l.cfg.OpTimeout, time.Second))
	r, err := l.call(ctx, request{Type: TypeValid, TimeoutMs: max(time.Until(dl).Milliseconds(), 1)}, dl, l.spec.Grace)
	if err != nil {
		return false
	}
	if r.Type != TypeOk {
		return false
	}
	if r.Held == nil {
		l.fail(`answered valid with ok but no "held" field`)
		return false
	}
	return *r.Held && !lost() // a lost line before the answer counts too
}

// Pause stops the whole process (SIGSTOP): every thread freezes, as in a GC pause.
func (l *Locker) Pause() error { return signalGroup(l.cmd.Process, syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (l *Locker) Resume() error { return signalGroup(l.cmd.Process, syscall.SIGCONT) }

// Kill kills the process (SIGKILL); the OS closes its connections. Its exit is then expected.
func (l *Locker) Kill() error {
	l.killed.Store(true)
	return signalGroup(l.cmd.Process, syscall.SIGKILL)
}

// Close ends the client: stdin is closed (a well-behaved client exits), and the process group
// is killed if it has not exited within a moment. It is safe to call more than once.
func (l *Locker) Close() error {
	if l.closing.Swap(true) {
		return nil
	}
	close(l.closed)
	_ = l.stdin.Close()
	select {
	case <-l.waitDone:
	case <-time.After(300 * time.Millisecond):
	}
	// The group too: a wrapper's children must not outlive the run. SIGCONT first in case a
	// pause is still in force (a stopped process does not act on SIGKILL's aftermath promptly).
	_ = signalGroup(l.cmd.Process, syscall.SIGCONT)
	_ = signalGroup(l.cmd.Process, syscall.SIGKILL)
	<-l.waitDone
	select {
	case <-l.readDone:
	case <-time.After(2 * time.Second):
	}
	if l.clock != nil {
		l.clock.close()
	}
	if l.file != nil {
		return l.file.Close()
	}
	return nil
}

var (
	_ algorithms.Locker      = (*Locker)(nil)
	_ algorithms.Validator   = (*Locker)(nil)
	_ algorithms.Pauser      = (*Locker)(nil)
	_ algorithms.Killer      = (*Locker)(nil)
	_ algorithms.Closer      = (*Locker)(nil)
	_ algorithms.Starter     = (*Locker)(nil)
	_ algorithms.ClockSetter = (*Locker)(nil)
)

// SetClock moves the process's clock (libfaketime): offset ahead of the real clock. Its monotonic
// clock moves with it, so the clock only ever steps forward: a heal (offset 0 after a skew ahead)
// leaves it where it is until the run ends, as a step back would run every timer and interval in
// the process backwards, which no real clock does. What cannot be applied — no libfaketime, a
// client whose manifest says clock: none, libfaketime not loaded in the process, a clock behind, a
// rate — breaks the client, so the run ends unknown rather than pass a fault that never reached it.
func (l *Locker) SetClock(offset time.Duration, rate float64) error {
	l.clockMu.Lock()
	defer l.clockMu.Unlock()
	switch {
	case l.killed.Load() || l.closing.Load():
		return nil // no process left to move
	case l.clock == nil && l.spec.NoClock:
		return l.fail("cannot have its clock moved: its manifest says clock: none (docs/process-clients.md, clock-skew)")
	case l.clock == nil && !l.cfg.ClockMoves:
		return l.fail("cannot have its clock moved: the run planned no clock fault, so the client was started without libfaketime (Config.ClockMoves)")
	case l.clock == nil:
		return l.fail("cannot have its clock moved: libfaketime is not installed (apt-get install libfaketime, or make deps)")
	case rate != 1:
		return l.fail(fmt.Sprintf("cannot have its clock run at rate %g: libfaketime counts a rate from the process's start", rate))
	case offset == l.clock.offset:
		return nil
	case offset < l.clock.offset && offset == 0:
		// The heal: the process's clock stays ahead (see above); its log says so.
		l.note(fmt.Sprintf("the clock fault healed; this process's clock stays %v ahead until the run ends (libfaketime moves its monotonic clock too)", l.clock.offset))
		return nil
	case offset < l.clock.offset:
		return l.fail(fmt.Sprintf("cannot have its clock set %v (now %v): libfaketime would step its monotonic clock back too", offset, l.clock.offset))
	}
	if l.cmd.Process == nil || !loaded(l.cmd.Process.Pid, l.clock.lib) {
		return l.fail(fmt.Sprintf("cannot have its clock moved: %s is not loaded in it (a static binary, or a runtime that drops LD_PRELOAD: say clock: none in its manifest)", l.clock.lib))
	}
	if err := l.clock.write(offset); err != nil {
		return l.fail(fmt.Sprintf("cannot have its clock moved: %v", err))
	}
	l.note(fmt.Sprintf("this process's clock moved to %v ahead (libfaketime, %s)", offset, l.clock.file))
	return nil
}

// note writes one line of the harness's own to the client's stderr log (client-N.stderr).
func (l *Locker) note(line string) {
	_, _ = l.stderr.Write([]byte("lockchaos: " + line + "\n"))
}
