package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// spawner starts every child process of a cluster from one goroutine locked to its OS thread.
//
// Pdeathsig is delivered when the *thread* that forked the child exits, not the process. Go
// parks and reuses threads freely, so a child forked from an arbitrary goroutine may be killed
// the moment the runtime retires that thread, long before the harness ends. Forking from one
// locked thread that lives exactly as long as the cluster fixes that: the children die when the
// harness dies (even by SIGKILL), and never earlier. The goroutine never unlocks, so when it
// returns (on Close) the runtime ends the thread with it.
type spawner struct {
	reqs chan spawnReq
	quit chan struct{}
	done chan struct{}
}

type spawnReq struct {
	cmd *exec.Cmd
	res chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq), quit: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *spawner) loop() {
	runtime.LockOSThread()
	defer close(s.done)
	for {
		select {
		case r := <-s.reqs:
			r.res <- r.cmd.Start()
		case <-s.quit:
			return
		}
	}
}

var errSpawnerClosed = errors.New("lockchaos: cluster is closed")

// start runs cmd.Start on the locked thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, res: make(chan error, 1)}
	select {
	case s.reqs <- r:
		return <-r.res
	case <-s.done:
		return errSpawnerClosed
	}
}

// stop ends the locked thread; call it only after every child is dead.
func (s *spawner) stop() {
	select {
	case <-s.done:
	default:
		close(s.quit)
		<-s.done
	}
}

// proc is one running server process.
type proc struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed when the process has exited and been reaped
	err  error         // Wait's result, valid after done
	// quiet is true while a death is expected or already explained: during start-up (the start
	// error carries the log) and once we kill it. Only a death while !quiet is reported.
	quiet atomic.Bool
}

// spawn starts argv (never through a shell) in its own process group, with SIGKILL as its parent
// death signal, appending stdout and stderr to logPath.
// cred, if not nil, is the user it runs as. onCrash, if not nil, is called (from another
// goroutine) when the process exits by itself.
func spawn(s *spawner, dir, logPath string, argv []string, cred *syscall.Credential, onCrash func(error)) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C"}
	// Setpgid lets Kill/Pause signal the whole group (java may fork helpers).
	// Go sets the parent death signal after it changes the credentials (which would clear it).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := s.start(cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	p := &proc{cmd: cmd, log: f, done: make(chan struct{})}
	p.quiet.Store(true)
	go func() {
		p.err = cmd.Wait()
		f.Close()
		// Report before done: once kill (and so Close) returns, nothing writes to Spec.Log.
		if onCrash != nil && !p.quiet.Load() {
			onCrash(p.err)
		}
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process group.
func (p *proc) signal(sig syscall.Signal) error {
	if p.exited() {
		return errors.New("process is not running")
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// kill SIGKILLs the process group and waits until the process is reaped. A stopped process dies
// from SIGKILL too, so no SIGCONT is needed.
func (p *proc) kill() {
	p.quiet.Store(true)
	if !p.exited() {
		pid := p.cmd.Process.Pid
		// Children that left the group die too: PostgreSQL's backends call setsid(), and outlive
		// a SIGKILL of the postmaster's group (they hold the old shared memory, so the restarted
		// server waits for them). The group is stopped first, so nothing forks meanwhile.
		_ = syscall.Kill(-pid, syscall.SIGSTOP)
		kids := descendants(pid)
		for _, d := range kids {
			_ = syscall.Kill(d, syscall.SIGKILL)
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-p.done
		// SIGKILL is delivered when the process next runs: on a loaded machine a backend may
		// still hold the old shared memory when a restart begins, and the new postmaster refuses
		// to start ("pre-existing shared memory block is still in use": 3 restarts of 9 of
		// postgres-standby's primary, whose WAL sender is one more backend). Wait until each is
		// gone or a zombie (a zombie has let go of its memory).
		waitGone(kids, 5*time.Second)
	}
	<-p.done
}

// waitGone waits, up to limit, until none of pids is alive (gone, or a zombie).
func waitGone(pids []int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil {
				break
			}
			if i := bytes.LastIndexByte(b, ')'); i < 0 || (len(b) > i+2 && (b[i+2] == 'Z' || b[i+2] == 'X')) {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// descendants lists the processes below pid, by their parent pids in /proc.
func descendants(pid int) []int {
	kids := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parens, so cut at the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			kids[ppid] = append(kids[ppid], child)
		}
	}
	var out []int
	for todo := kids[pid]; len(todo) > 0; {
		c := todo[0]
		todo = append(todo[1:], kids[c]...)
		out = append(out, c)
	}
	return out
}

// logTail returns the last n lines of a log file, for error messages.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// withLog appends the tail of a server log to a start error, since "not ready" alone says nothing.
func withLog(err error, logPath string) error {
	if t := logTail(logPath, 15); t != "" {
		return fmt.Errorf("%w\n--- %s (tail) ---\n%s", err, logPath, t)
	}
	return err
}

func logSays(logPath, s string) bool {
	b, _ := os.ReadFile(logPath)
	return bytes.Contains(b, []byte(s))
}
