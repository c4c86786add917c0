package process

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

// Pdeathsig is delivered when the *thread* that forked the child exits. Go retires threads
// freely, so every child is forked from one goroutine locked to its thread for the life of the
// harness: the children die with the harness (even on SIGKILL), never earlier.
var (
	spawnOnce sync.Once
	spawnReqs chan spawnReq
)

type spawnReq struct {
	cmd *exec.Cmd
	res chan error
}

func start(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawnReqs {
				r.res <- r.cmd.Start()
			}
		}()
	})
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	r := spawnReq{cmd: cmd, res: make(chan error, 1)}
	spawnReqs <- r
	return <-r.res
}

// tail keeps the last lines written to it (a client's stderr), and copies everything to a file
// when one is given.
type tail struct {
	mu    sync.Mutex
	file  io.Writer
	lines []string
	part  []byte
	max   int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.file != nil {
		_, _ = t.file.Write(p)
	}
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.push(string(t.part[:i]))
		t.part = t.part[i+1:]
	}
	if len(t.part) > 4096 {
		t.push(string(t.part))
		t.part = nil
	}
	return len(p), nil
}

func (t *tail) push(line string) {
	line = strings.TrimRight(line, "\r")
	if strings.Trim(line, " \t^~") == "" {
		return // blank, or only the carets under a Python traceback's expression
	}
	t.lines = append(t.lines, clip(line, 300))
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

// Last returns the last lines, the unterminated one included.
func (t *tail) Last() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if s := strings.TrimSpace(string(t.part)); s != "" {
		out = append(out, clip(s, 300))
	}
	if len(out) > t.max {
		out = out[len(out)-t.max:]
	}
	return out
}

// signalGroup signals the client's whole process group (a shell wrapper and the runtime it
// starts), falling back to the process itself.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	if err := syscall.Kill(-p.Pid, sig); err == nil {
		return nil
	}
	return p.Signal(sig)
}
