package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Control is one way of acting on a node that the external backend has only when the cluster
// file gives it.
type Control string

// Controls of a node.
const (
	ControlLinks       Control = "toxiproxy"   // proxies on the clients' links (network faults)
	ControlKill        Control = "kill"        // the kill command
	ControlRestart     Control = "restart"     // the restart command
	ControlPause       Control = "pause"       // the pause and resume commands
	ControlReplication Control = "replication" // the replication link (failover): never external
)

// Missing returns nil when the file gives node the control, else one line naming the node and
// what to add to the file.
func (f *ExternalFile) Missing(node string, ctl Control) error {
	n, ok := f.Node(node)
	if !ok {
		return fmt.Errorf("cluster file %s has no node %s", f.Path, node)
	}
	var have bool
	var add string
	switch ctl {
	case ControlLinks:
		have, add = n.Toxiproxy != "", "toxiproxy: HOST:8474, the API of a toxiproxy-server next to it"
	case ControlKill:
		have, add = n.Kill != "", "kill: with a shell command that kills the server"
	case ControlRestart:
		have, add = n.Restart != "", "restart: with a shell command that restarts the server empty"
	case ControlPause:
		have, add = n.Pause != "" && n.Resume != "", "pause: and resume: with shell commands that stop and continue the server"
	case ControlReplication:
		return fmt.Errorf("node %s: lockchaos cannot cut an external cluster's replication (run failover on --backend local or docker)", node)
	default:
		return fmt.Errorf("node %s: unknown control %s", node, ctl)
	}
	if have {
		return nil
	}
	return fmt.Errorf("node %s has no %s in cluster file %s (add %s)", node, ctl, f.Path, add)
}

// command returns the node's shell command for ctl ("resume" for a pause's end).
func (n ExternalNode) command(ctl string) string {
	switch ctl {
	case "kill":
		return n.Kill
	case "restart":
		return n.Restart
	case "pause":
		return n.Pause
	case "resume":
		return n.Resume
	}
	return ""
}

// runCommand runs node's command for ctl with sh -c, bounded by the file's timeout; on failure the
// error holds the tail of its output. The command sees LOCKCHAOS_NODE and LOCKCHAOS_ADDRESS.
func (b *external) runCommand(ctx context.Context, node, ctl string) error {
	n, ok := b.file.Node(node)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownNode, node)
	}
	line := n.command(ctl)
	if line == "" {
		return fmt.Errorf("%w: node %s has no %s command in cluster file %s (add %s: to it)", ErrBadSpec, node, ctl, b.file.Path, ctl)
	}
	ctx, cancel := context.WithTimeout(ctx, b.file.Timeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Env = append(os.Environ(), "LOCKCHAOS_NODE="+n.Name, "LOCKCHAOS_ADDRESS="+n.Address)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group, so a timeout kills what the shell started too; and a command that
	// leaves a daemon holding its output does not keep us waiting.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	t0 := time.Now()
	err := cmd.Run()
	if err == nil || errors.Is(err, exec.ErrWaitDelay) {
		return nil
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v (raise command_timeout)", b.file.Timeout())
	}
	return fmt.Errorf("%s command of %s (%s) failed after %v: %v; output: %s", ctl, node, line,
		time.Since(t0).Round(time.Millisecond), err, tail(out.String(), 400))
}

// tail is the last max bytes of s on one line.
func tail(s string, max int) string {
	s = strings.TrimSpace(s)
	if len(s) > max {
		s = "…" + s[len(s)-max:]
	}
	if s == "" {
		return "(none)"
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

// control runs a process fault's command on an external node: kill, restart (then waits until
// the server answers again), pause or resume. It always handles the fault: the external
// backend's machines can do none.
func (b *external) control(ctx context.Context, n *node, ctl string) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return true, fmt.Errorf("%s: %w", n.Name, errSpawnerClosed)
	}
	if err := b.runCommand(ctx, n.Name, ctl); err != nil {
		return true, err
	}
	b.noteLeft(n.Name, ctl)
	if ctl != "restart" {
		return true, nil
	}
	n.restarted = true
	if err := n.waitReady(ctx); err != nil {
		return true, fmt.Errorf("%s (%s) after its restart command: %w", n.Name, n.Addr, err)
	}
	return true, nil
}
