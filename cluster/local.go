package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// local is the local backend: servers are child processes of the harness, each with its own
// directory (config, data, log) in the run dir.
type local struct {
	spec Spec
	dir  string
	sp   *spawner
}

func newLocal(spec Spec) (*local, error) {
	dir, err := os.MkdirTemp(spec.Dir, "lockchaos-"+spec.Topology+"-")
	if err != nil {
		return nil, fmt.Errorf("make run dir under %s: %w", spec.Dir, err)
	}
	return &local{spec: spec, dir: dir, sp: newSpawner()}, nil
}

func (b *local) name() string  { return Local }
func (b *local) runID() string { return filepath.Base(b.dir) }

func (b *local) ports(k Kind) int { return k.localPorts() }

func (b *local) machine(n *node) Machine {
	n.Addr = localAddr(n.ports[0])
	n.inner = n.Addr
	n.readyTimeout = n.Kind.readyTimeout()
	dir := filepath.Join(b.dir, n.Name)
	return &process{b: b, n: n, dir: dir, logPath: filepath.Join(dir, n.Name+".log")}
}

func (b *local) replicationListen() (string, error) { return "127.0.0.1:0", nil }

// close runs after every process is dead: ends the spawner's thread and removes the run dir.
func (b *local) close() error {
	b.sp.stop()
	return removeAll(b.dir)
}

// process is a node's server as a child process.
type process struct {
	b       *local
	n       *node
	dir     string // the node's own directory inside the run dir
	logPath string
	p       *proc
}

func (m *process) Start(ctx context.Context, restart bool) error {
	argv, err := m.b.argv(m, restart)
	if err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	var onCrash func(error)
	if n := m.n; n.report != nil {
		onCrash = func(err error) {
			how := "exit status 0"
			if err != nil {
				how = err.Error() // "signal: segmentation fault", "exit status 1"
			}
			n.report(fmt.Sprintf("%s (%s) exited by itself: %s", n.Name, n.Addr, how), logTail(m.logPath, 15))
		}
	}
	p, err := spawn(m.b.sp, m.dir, m.logPath, argv, m.n.srv.cred, onCrash)
	if err != nil {
		return err
	}
	m.p = p
	return nil
}

func (m *process) Dead(context.Context, int, error) error {
	if m.p.exited() {
		return fmt.Errorf("process exited: %v", m.p.err)
	}
	return nil
}

func (m *process) Exited() <-chan struct{} { return m.p.done }

// answered makes sure the listener that answered the readiness probe is this server's
// (ownsListener): one of another process, on a port taken before ours bound it, is ErrAddrInUse,
// so the cluster starts again on fresh ports.
func (m *process) answered() error {
	port := m.n.ports[0]
	if ownsListener(m.p.cmd.Process.Pid, port) {
		return nil
	}
	return fmt.Errorf("another process answers on port %d, not this server (%w)", port, ErrAddrInUse)
}

func (m *process) Failed(err error) error {
	m.p.kill()
	if logSays(m.logPath, "ddress already in use") {
		err = fmt.Errorf("%w (%w)", err, ErrAddrInUse)
	}
	return withLog(err, m.logPath)
}

func (m *process) Watch() { m.p.quiet.Store(false) }

func (m *process) Stop() {
	if m.p != nil {
		m.p.kill()
	}
}

// SaveLog copies the tail of the server's log file: both lives of a restarted server, since a
// restart appends to it.
func (m *process) SaveLog(w io.Writer) (bool, error) {
	f, err := os.Open(m.logPath)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // never started
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > SavedLogMax {
		if _, err := f.Seek(st.Size()-SavedLogMax, io.SeekStart); err != nil {
			return false, err
		}
	}
	_, err = io.Copy(w, io.LimitReader(f, SavedLogMax))
	return true, err
}

func (m *process) Release()      { m.Stop() }
func (m *process) Running() bool { return m.p != nil }

func (m *process) Pause(on bool) error {
	if on {
		return m.p.signal(syscall.SIGSTOP)
	}
	return m.p.signal(syscall.SIGCONT)
}

// removeAll retries briefly: a just-killed server's files may still be being closed.
func removeAll(dir string) error {
	var err error
	for i := 0; i < 5; i++ {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove run dir: %w", err)
}
