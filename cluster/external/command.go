package external

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

	"github.com/lockchaos/lockchaos/cluster"
)

// command returns n's shell command for ctl ("resume" for a pause's end).
func command(n cluster.ExternalNode, ctl string) string {
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
func (b *backend) runCommand(ctx context.Context, node, ctl string) error {
	n, ok := b.file.Node(node)
	if !ok {
		return fmt.Errorf("%w %q", cluster.ErrUnknownNode, node)
	}
	line := command(n, ctl)
	if line == "" {
		return fmt.Errorf("%w: node %s has no %s command in cluster file %s (add %s: to it)", cluster.ErrBadSpec, node, ctl, b.file.Path, ctl)
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

// Control runs a process fault's command on a node: kill, restart, pause or resume (the core
// holds the node's lock, and waits after a restart until the server answers again). It handles
// every fault: the external backend's machines can do none.
func (b *backend) Control(ctx context.Context, node, ctl string) error {
	if err := b.runCommand(ctx, node, ctl); err != nil {
		return err
	}
	b.noteLeft(node, ctl)
	return nil
}
