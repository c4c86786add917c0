package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/soak"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// TestSoakInterrupt stops a soak of two algorithms by SIGINT while the first runs: the command
// ends within seconds, leaves no server behind, and reports what ran — the first algorithm's
// recorded history checked (its line says it was interrupted), the second "not run" — in soak.json,
// soak.html and its output.
func TestSoakInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	bin := testenv.BuildCLI(t)
	tmp := t.TempDir() // the soak's servers live under TMPDIR: find them by it
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "soak", "--algorithms", "token,redlock", "--time", "2m", "--faults", "client-pause,latency",
		"--rate", "60", "--seed", "7", "--quiet", "--out", out)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hist := filepath.Join(out, "soak", "token", "history.jsonl")
	deadline := time.Now().Add(30 * time.Second)
	for grantedClients(hist) < 2 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no grants to two clients in %s within 30s; stderr: %s", hist, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // into the chaos: faults come from 1 s on
	if len(procsMentioning(tmp)) == 0 {
		cmd.Process.Kill()
		t.Fatalf("no server process found under %s while soaking: the test would prove nothing", tmp)
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the soak did not end within 30 s of SIGINT; stderr: %s", stderr.String())
	}
	t.Logf("ended %v after SIGINT, exit %d:\n%s", time.Since(sent).Round(time.Millisecond), cmd.ProcessState.ExitCode(), stdout.String())
	if code := cmd.ProcessState.ExitCode(); code == exitHarness || code == exitUsage || code < 0 {
		t.Errorf("exit %d after SIGINT: want the verdict's (0, 1 or 2); stderr: %s", code, stderr.String())
	}
	if left := procsMentioning(tmp); len(left) > 0 {
		t.Errorf("server processes survive the interrupted soak: %v", left)
	}
	raw, err := os.ReadFile(filepath.Join(out, soak.JSONFile))
	if err != nil {
		t.Fatalf("no soak.json after SIGINT: %v", err)
	}
	var rep soak.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Algorithms) != 2 {
		t.Fatalf("soak.json has %d algorithms, want 2: %s", len(rep.Algorithms), raw)
	}
	tok, rl := rep.Algorithms[0], rep.Algorithms[1]
	if tok.NotRun != "" || !strings.Contains(tok.Error, "interrupted") || tok.Operations == 0 || tok.Verdict == "" {
		t.Errorf("token: not_run %q, error %q, %d operations, verdict %q: want its interrupted run checked", tok.NotRun, tok.Error,
			tok.Operations, tok.Verdict)
	}
	if !strings.Contains(rl.NotRun, "interrupted") {
		t.Errorf("redlock: not_run %q: want it not run, the soak interrupted before it", rl.NotRun)
	}
	if _, err := os.Stat(filepath.Join(out, soak.HTMLFile)); err != nil {
		t.Errorf("no soak.html after SIGINT: %v", err)
	}
	if !strings.Contains(stdout.String(), "redlock: not run") || !strings.Contains(stdout.String(), "interrupted") {
		t.Errorf("output does not say what ran and what did not:\n%s", stdout.String())
	}
}
