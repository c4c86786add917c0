package process

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
)

// Spec says how to start one kind of process client.
type Spec struct {
	// Name is the algorithm's name (in messages and errors).
	Name string
	// Command is the argv; a relative Command[0] with a slash is resolved against Dir.
	Command []string
	// Dir is the client's working directory (a manifest's directory).
	Dir string
	// Topology is sent in init when the run does not say (algorithms.Config.Topology).
	Topology string
	// Valid says the client answers "valid" messages.
	Valid bool
	// Env is added to the harness's environment.
	Env []string
	// InitTimeout bounds the wait for init_ok (default 30 s: a JVM on a loaded machine).
	InitTimeout time.Duration
	// Grace is how long past a request's own deadline its reply may come (default 5 s).
	Grace time.Duration
	// NoClock says the client's runtime reads the clock without libc (a static binary, a Go
	// program), so libfaketime cannot move it: the client is started without it, and a clock
	// fault on it breaks the run rather than pass for applied.
	NoClock bool
}

// BrokenError says a process client broke the protocol; it wraps algorithms.ErrBroken.
type BrokenError struct {
	Client  string   // "redis-py client 3"
	Problem string   // what it did
	Stderr  []string // its last stderr lines
}

func (e *BrokenError) Error() string {
	s := fmt.Sprintf("process client %s %s", e.Client, e.Problem)
	if len(e.Stderr) > 0 {
		s += "; last stderr: " + strings.Join(e.Stderr, " | ")
	} else {
		s += "; its stderr was empty"
	}
	return s
}

func (e *BrokenError) Unwrap() error { return algorithms.ErrBroken }

// errKilled is returned by calls made after a client-crash fault killed the process.
var errKilled = errors.New("lockchaos: process client was killed by a fault")

// Locker is one process client behind algorithms.Locker. It also implements Validator (asking
// "valid" when the client supports it, and honouring "lost" either way), Pauser, Killer and
// Closer. Calls are made by one harness client at a time.
type Locker struct {
	spec   Spec
	cfg    algorithms.Config
	who    string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tail
	file   *os.File
	name   string // the name the client gave in init_ok

	writeMu  sync.Mutex
	mu       sync.Mutex
	nextID   int64
	pending  map[int64]chan reply
	broken   error
	brokenCh chan struct{}
	lost     atomic.Int64
	killed   atomic.Bool
	closing  atomic.Bool
	readDone chan struct{}
	waitDone chan struct{}
	waitErr  error
	ready    chan struct{} // closed when init is answered (readyErr says how)
	readyErr error
	closed   chan struct{} // closed by Close: pending calls give up
	clockMu  sync.Mutex
	clock    *faketime // nil when the client runs without libfaketime
}

// leaseData is what the Locker keeps in a Lease.
type leaseData struct {
	lostSeen int64 // lost messages seen when the lease was granted
}

// New starts the client process, sends init and waits for init_ok.
func New(spec Spec, cfg algorithms.Config) (*Locker, error) {
	l, err := Start(spec, cfg)
	if err != nil {
		return nil, err
	}
	if err := l.Ready(context.Background()); err != nil {
		return nil, err
	}
	return l, nil
}

// Ready waits for the client's init_ok (algorithms.Starter); on failure the client is closed.
func (l *Locker) Ready(ctx context.Context) error {
	select {
	case <-l.ready:
	case <-ctx.Done():
		_ = l.Close()
		return ctx.Err()
	}
	if l.readyErr != nil {
		_ = l.Close()
	}
	return l.readyErr
}

// Start starts the client process and sends init without waiting for the answer: call Ready
// before using the Locker (Acquire, Release and Valid wait for it too).
func Start(spec Spec, cfg algorithms.Config) (*Locker, error) {
	if len(spec.Command) == 0 {
		return nil, fmt.Errorf("process client %s: no command", spec.Name)
	}
	if spec.InitTimeout == 0 {
		spec.InitTimeout = 30 * time.Second
	}
	if spec.Grace == 0 {
		spec.Grace = 5 * time.Second
	}
	l := &Locker{spec: spec, cfg: cfg, who: fmt.Sprintf("%s client %d", spec.Name, cfg.Client),
		stderr: &tail{max: 5}, pending: map[int64]chan reply{}, brokenCh: make(chan struct{}),
		readDone: make(chan struct{}), waitDone: make(chan struct{}), ready: make(chan struct{}),
		closed: make(chan struct{})}
	argv := append([]string(nil), spec.Command...)
	if strings.Contains(argv[0], "/") && !filepath.IsAbs(argv[0]) && spec.Dir != "" {
		argv[0] = filepath.Join(spec.Dir, argv[0])
	}
	l.cmd = exec.Command(argv[0], argv[1:]...)
	l.cmd.Dir = spec.Dir
	l.cmd.Env = append(append(os.Environ(), "PYTHONUNBUFFERED=1",
		fmt.Sprintf("LOCKCHAOS_CLIENT=%d", cfg.Client)), spec.Env...)
	// libfaketime only where the run plans to move the clock: with it preloaded, Debian's
	// libfaketime 0.9.10 returns CLOCK_MONOTONIC on the wall clock's epoch, and Python's timed
	// waits (threading.Event.wait(t), a Condition's, concurrent.futures') compute their deadline
	// from it while the kernel waits on the real monotonic clock: they never time out (an
	// Event.wait(0.2) hung for good). Without it, a process client's clock is the machine's.
	if lib := FaketimeLib(); lib != "" && !spec.NoClock && cfg.ClockMoves {
		f, err := newFaketime(lib, cfg.Dir, cfg.Client)
		if err != nil {
			return nil, fmt.Errorf("process client %s: its clock file: %w", l.who, err)
		}
		l.clock, l.cmd.Env = f, f.env(l.cmd.Env)
	}
	if cfg.Dir != "" {
		f, err := os.Create(filepath.Join(cfg.Dir, fmt.Sprintf("client-%d.stderr", cfg.Client)))
		if err != nil {
			return nil, fmt.Errorf("process client %s: %w", l.who, err)
		}
		l.file, l.stderr.file = f, f
	}
	l.cmd.Stderr = l.stderr
	var err error
	if l.stdin, err = l.cmd.StdinPipe(); err != nil {
		return nil, l.startErr(err)
	}
	// Our own pipe, not StdoutPipe: Wait would close that one on exit, losing the last lines.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, l.startErr(err)
	}
	l.cmd.Stdout = w
	err = start(l.cmd)
	_ = w.Close()
	if err != nil {
		_ = stdout.Close()
		return nil, l.startErr(err)
	}
	go func() {
		l.waitErr = l.cmd.Wait()
		close(l.waitDone)
	}()
	go l.read(stdout)
	go func() {
		l.readyErr = l.init()
		close(l.ready)
	}()
	return l, nil
}

func (l *Locker) startErr(err error) error {
	if l.file != nil {
		_ = l.file.Close()
	}
	if l.clock != nil {
		l.clock.close()
	}
	return &BrokenError{Client: l.who, Problem: fmt.Sprintf("could not start %q: %v", l.spec.Command[0], err)}
}

func (l *Locker) init() error {
	topology := l.cfg.Topology
	if topology == "" {
		topology = l.spec.Topology
	}
	req := request{Type: TypeInit, Client: l.cfg.Client, Lock: l.cfg.Name, TTLMs: l.cfg.TTL.Milliseconds(),
		Nodes: l.cfg.Addrs, Topology: topology, SessionTimeoutMs: l.cfg.SessionTimeout.Milliseconds()}
	if s := l.cfg.Sentinel; s != nil {
		req.SentinelMaster, req.SentinelAddresses = s.MasterName, s.Addrs
	}
	req.Routes = l.cfg.Routes
	req.SQLLogin = l.cfg.SQL
	req.KubeAccess = l.cfg.Kube
	r, err := l.call(context.Background(), req, time.Now().Add(l.spec.InitTimeout), 0)
	if err != nil {
		return err
	}
	if r.Type != TypeInitOk {
		return l.fail(fmt.Sprintf("answered init with %q (want init_ok; text %q)", r.Type, r.Text))
	}
	l.name = r.Name
	return nil
}

// Name returns the name the client gave in init_ok (library and version).
func (l *Locker) Name() string { return l.name }

// read turns the client's stdout into replies; any line that breaks the protocol breaks the client.
func (l *Locker) read(stdout io.ReadCloser) {
	defer close(l.readDone)
	defer stdout.Close()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		r, err := parseReply(line)
		if err != nil {
			l.fail(err.Error())
			return
		}
		if r.Type == TypeLost {
			l.lost.Add(1)
			continue
		}
		id := *r.InReplyTo
		l.mu.Lock()
		ch, ok := l.pending[id]
		delete(l.pending, id)
		asked := id >= 0 && id < l.nextID
		l.mu.Unlock()
		switch {
		case ok:
			ch <- r
		case !asked:
			l.fail(fmt.Sprintf("answered id %d, which it was not asked", id))
			return
		}
		// Otherwise a late answer to a request the harness gave up on when the run ended: dropped.
	}
	<-l.waitDone
	if l.killed.Load() || l.closing.Load() {
		return
	}
	problem := "exited (status 0)"
	if l.waitErr != nil {
		problem = fmt.Sprintf("exited (%v)", l.waitErr)
	}
	if err := sc.Err(); err != nil {
		problem += fmt.Sprintf(" after a read error: %v", err)
	}
	l.fail(problem + " while the harness was still using it")
}

// fail breaks the client once: the error is kept for every later call and the process is killed.
func (l *Locker) fail(problem string) error {
	l.mu.Lock()
	if l.broken != nil {
		err := l.broken
		l.mu.Unlock()
		return err
	}
	// Give a dying process a moment to flush its last stderr lines.
	l.mu.Unlock()
	select {
	case <-l.waitDone:
	case <-time.After(200 * time.Millisecond):
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken == nil {
		l.broken = &BrokenError{Client: l.who, Problem: problem, Stderr: l.stderr.Last()}
		close(l.brokenCh)
		if l.cmd.Process != nil {
			_ = signalGroup(l.cmd.Process, syscall.SIGKILL)
		}
	}
	return l.broken
}

// call sends req and waits for its answer until deadline (+ the grace), or until ctx is
// canceled (the run ends). A deadline that passes is the client's fault: it was told timeout_ms.
func (l *Locker) call(ctx context.Context, req request, deadline time.Time, grace time.Duration) (reply, error) {
	if l.killed.Load() {
		return reply{}, errKilled
	}
	l.mu.Lock()
	if l.broken != nil {
		l.mu.Unlock()
		return reply{}, l.broken
	}
	req.ID = l.nextID
	l.nextID++
	ch := make(chan reply, 1)
	l.pending[req.ID] = ch
	l.mu.Unlock()

	b, _ := json.Marshal(req)
	l.writeMu.Lock()
	_, err := l.stdin.Write(append(b, '\n'))
	l.writeMu.Unlock()
	if err != nil {
		if l.killed.Load() {
			return reply{}, errKilled
		}
		// Most often the process has exited: let the reader say so, with its exit status.
		select {
		case <-l.brokenCh:
			return reply{}, l.broken
		case <-time.After(time.Second):
		}
		return reply{}, l.fail(fmt.Sprintf("stopped reading its stdin (%v)", err))
	}
	limit := time.Until(deadline) + grace
	t := time.NewTimer(limit)
	defer t.Stop()
	done := ctx.Done()
	for {
		select {
		case r := <-ch:
			return r, nil
		case <-l.brokenCh:
			return reply{}, l.broken
		case <-l.closed:
			return reply{}, fmt.Errorf("process client %s was closed", l.who)
		case <-done:
			if !errors.Is(ctx.Err(), context.Canceled) || time.Now().After(deadline) {
				// A deadline, or the run ended while the client was already late: it was told
				// timeout_ms, so its answer is awaited until the grace is over.
				done = nil
				continue
			}
			l.mu.Lock()
			delete(l.pending, req.ID)
			l.mu.Unlock()
			return reply{}, &algorithms.UnknownError{Op: req.Type, Err: ctx.Err()}
		case <-t.C:
			if l.killed.Load() {
				return reply{}, errKilled
			}
			return reply{}, l.fail(fmt.Sprintf("did not answer %s (id %d) within %s", req.Type, req.ID, limit.Round(time.Millisecond)))
		}
	}
}

// deadline is ctx's deadline, or def from now.
func deadline(ctx context.Context, def time.Duration) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(def)
}

// outcome maps a fail or info reply to the error the harness records, checking its code.
func (l *Locker) outcome(op string, r reply, fails ...string) error {
	text := r.Code
	if r.Text != "" {
		text += ": " + r.Text
	}
	switch r.Type {
	case TypeFail:
		for _, c := range fails {
			if r.Code == c {
				if c == CodeNotHeld {
					return fmt.Errorf("%s %s: %w", l.spec.Name, op, algorithms.ErrNotHeld)
				}
				return fmt.Errorf("%s %s failed: %s", l.spec.Name, op, text)
			}
		}
		return l.fail(fmt.Sprintf("answered %s with fail code %q (want one of %s)", op, r.Code, strings.Join(fails, ", ")))
	case TypeInfo:
		if r.Code != CodeTimeout && r.Code != CodeConnectionLost {
			return l.fail(fmt.Sprintf("answered %s with info code %q (want timeout or connection_lost)", op, r.Code))
		}
		return &algorithms.UnknownError{Op: l.spec.Name + " " + op, Err: errors.New(text)}
	}
	return l.fail(fmt.Sprintf("answered %s with %q (want ok, fail or info)", op, r.Type))
}
