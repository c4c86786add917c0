package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// lockchaos runs the CLI in-process and returns its exit code, stdout and stderr.
func lockchaos(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestBadInput: every kind of bad input gets one line naming the problem, and exit 254.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt")
	os.MkdirAll(corrupt, 0o755)
	os.WriteFile(filepath.Join(corrupt, "history.jsonl"), []byte("{\"type\":\"meta\"}\nnot json\n{\"type\":\"ok\",\"id\":1,\"at_ns\":1}\n"), 0o644)
	badYAML := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badYAML, []byte("scenarios:\n  - name: x\n    colour: red\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "usage"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"unknown algorithm", []string{"run", "--algorithm", "nope"}, `unknown algorithm "nope"`},
		{"no algorithm", []string{"run"}, "needs --algorithm"},
		{"unknown scenario", []string{"run", "--algorithm", "token", "--scenario", "nope"}, `unknown scenario "nope"`},
		{"malformed duration", []string{"run", "--algorithm", "token", "--duration", "5 parsecs"}, "invalid value"},
		{"negative duration", []string{"run", "--algorithm", "token", "--duration", "-5s"}, "negative"},
		{"negative clients", []string{"run", "--algorithm", "token", "--clients", "-2"}, "negative"},
		{"zero ttl", []string{"run", "--algorithm", "token", "--ttl", "0s"}, "a lease needs a TTL"},
		{"zero clients", []string{"run", "--algorithm", "token", "--clients", "0"}, "give a positive value"},
		{"bad backend", []string{"run", "--algorithm", "token", "--backend", "cloud"}, "unknown: use local"},
		{"bad expect", []string{"run", "--algorithm", "token", "--expect", "fine"}, "--expect"},
		// Every code the catalogue's expectations take is a good --expect: the error is the
		// scenario's, not --expect's.
		{"expect unsafe-lost", []string{"run", "--algorithm", "token", "--expect", "unsafe-lost", "--scenario", "nope"}, `unknown scenario "nope"`},
		{"expect Ul", []string{"run", "--algorithm", "token", "--expect", "Ul", "--scenario", "nope"}, `unknown scenario "nope"`},
		{"expect Us", []string{"run", "--algorithm", "token", "--expect", "Us", "--scenario", "nope"}, `unknown scenario "nope"`},
		{"n/a cell", []string{"run", "--algorithm", "token", "--scenario", "zk-leader-kill"}, "does not apply"},
		{"shard 3/2", []string{"matrix", "--shard", "3/2"}, "--shard"},
		{"zero runs", []string{"matrix", "--runs", "0"}, "--runs"},
		{"check without dir", []string{"check"}, "needs one run directory"},
		{"check of no run", []string{"check", dir}, "no history.jsonl"},
		{"corrupt history", []string{"check", corrupt}, "line 2"},
		{"unknown yaml field", []string{"run", "--algorithm", "token", "--scenario", "x", "--scenario-file", badYAML}, "line 3"},
		{"stray argument", []string{"run", "--algorithm", "token", "now"}, "unexpected argument"},
		{"analyze without algorithm", []string{"analyze"}, "analyze needs --algorithm"},
		{"analyze no such scenario", []string{"analyze", "--algorithm", "token", "--scenarios", "meteor"}, `no scenario "meteor"`},
		{"analyze with duration", []string{"analyze", "--algorithm", "token", "--duration", "5s"}, "--duration does not apply"},
		{"soak without algorithm", []string{"soak"}, "needs --algorithm"},
		{"soak unknown fault", []string{"soak", "--algorithm", "token", "--faults", "meteor"}, `unknown fault "meteor"`},
		{"soak fault the topology cannot take", []string{"soak", "--algorithms", "token,zookeeper", "--faults", "clock-jump"}, "does not apply to topology zookeeper"},
		{"soak with duration", []string{"soak", "--algorithm", "token", "--duration", "5s"}, "--duration does not apply"},
		{"soak too short", []string{"soak", "--algorithm", "token", "--time", "1s"}, "too short"},
		{"soak replay of nothing", []string{"soak", "--algorithm", "token", "--replay", dir}, "no plan.json"},
		{"soak replay with a seed", []string{"soak", "--algorithm", "token", "--replay", dir, "--seed", "3"}, "leave out --seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := lockchaos(t, tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", code, exitUsage, out, errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q does not say %q", errOut, tc.want)
			}
			if tc.args != nil && strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("want one line, got %q", errOut)
			}
		})
	}
}

// TestMissingServer: without redis-server on PATH a run says what to install, exit 254.
func TestMissingServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	code, _, errOut := lockchaos(t, "run", "--algorithm", "token", "--out", t.TempDir(), "--quiet")
	if code != exitUsage || !strings.Contains(errOut, "redis-server") || !strings.Contains(errOut, "install") {
		t.Errorf("exit %d, stderr %q: want 254 and how to install redis-server", code, errOut)
	}
}

func TestListJSON(t *testing.T) {
	code, out, _ := lockchaos(t, "list", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var l listing
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatal(err)
	}
	names := map[string][]string{}
	for _, a := range l.Algorithms {
		names[a.Name] = a.Points
	}
	for _, want := range []string{"setnx", "setnx-expire", "setnx-px", "getset", "token", "redlock", "zookeeper"} {
		if _, ok := names[want]; !ok {
			t.Errorf("list lacks algorithm %s", want)
		}
	}
	if p := names["setnx-expire"]; len(p) == 0 || p[0] != "acquire:after-setnx" {
		t.Errorf("setnx-expire points %v, want acquire:after-setnx first", p)
	}
	if len(l.Scenarios) < 13 {
		t.Errorf("%d scenarios, want the catalogue's 13", len(l.Scenarios))
	}
}

// TestRunExitsByVerdict: token under client-pause is unsafe of the client class (exit 1), and
// exits 0 with --expect unsafe. Real servers.
func TestRunExitsByVerdict(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	out := t.TempDir()
	code, stdout, stderr := lockchaos(t, "run", "--algorithm", "token", "--scenario", "client-pause", "--seed", "1", "--out", out, "--json")
	if code != exitInvalid {
		t.Fatalf("exit %d, want 1 (stderr %s)", code, stderr)
	}
	var r struct {
		Verdict        string  `json:"verdict"`
		ViolationClass *string `json:"violation_class"`
		TTDMs          *float64
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict != "unsafe" || r.ViolationClass == nil || *r.ViolationClass != "client" {
		t.Errorf("verdict %s class %v, want unsafe client", r.Verdict, r.ViolationClass)
	}
	for _, f := range []string{"history.jsonl", "result.json", "report.html", "linearizability.html"} {
		if _, err := os.Stat(filepath.Join(out, "client-pause", "token", f)); err != nil {
			t.Errorf("run wrote no %s: %v", f, err)
		}
	}
	code, _, stderr = lockchaos(t, "run", "--algorithm", "token", "--scenario", "client-pause", "--seed", "1", "--out", out, "--expect", "unsafe", "--quiet")
	if code != exitValid {
		t.Errorf("--expect unsafe: exit %d, want 0 (%s)", code, stderr)
	}
	// check of that run exits by the expectation it recorded, as run did.
	code, stdout, stderr = lockchaos(t, "check", filepath.Join(out, "client-pause", "token"))
	if code != exitValid || !strings.Contains(stdout, "[as expected]") || !strings.Contains(stderr, "recorded expectation, unsafe") {
		t.Errorf("check of the --expect unsafe run: exit %d, stdout %q, stderr %q; want 0 by the expectation", code, stdout, stderr)
	}
}

// TestRunExpectUnsafeLost: --expect takes every code the catalogue's expectations do, unsafe-lost
// (Ul) among them: fence-unchecked × client-pause loses an update (20/20 in make reproduce), so
// the run exits 0 as expected, and by the same judge exits 1 expecting what it did not do.
// Real servers.
func TestRunExpectUnsafeLost(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	out := t.TempDir()
	code, stdout, stderr := lockchaos(t, "run", "--algorithm", "fence-unchecked", "--scenario", "client-pause", "--seed", "1",
		"--out", out, "--expect", "unsafe-lost")
	if code != exitValid || !strings.Contains(stdout, "[as expected]") {
		t.Fatalf("--expect unsafe-lost: exit %d, stdout %q, stderr %q; want 0, as expected", code, stdout, stderr)
	}
	var r struct {
		Expected string `json:"expected"`
		Matches  *bool  `json:"matches_expectation"`
	}
	b, err := os.ReadFile(filepath.Join(out, "client-pause", "fence-unchecked", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Expected != "unsafe-lost" || r.Matches == nil || !*r.Matches {
		t.Errorf("result.json: expected %q, matches %v (%v); want unsafe-lost, true", r.Expected, r.Matches, err)
	}
	// The recorded expectation is the long name, whatever the spelling given.
	if code, _, stderr := lockchaos(t, "check", filepath.Join(out, "client-pause", "fence-unchecked")); code != exitValid ||
		!strings.Contains(stderr, "recorded expectation, unsafe-lost") {
		t.Errorf("check: exit %d, stderr %q; want 0 by the recorded expectation unsafe-lost", code, stderr)
	}
}

// TestKilledHarnessLeavesNothing stops the harness mid-run by SIGKILL, SIGINT and SIGTERM: no
// server it started survives, and the history it wrote can still be checked. SIGINT and SIGTERM
// end the run early but cleanly: it is checked and reported.
func TestKilledHarnessLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	bin := testenv.BuildCLI(t)
	for _, tc := range []struct {
		alg string
		sig syscall.Signal
	}{{"token", syscall.SIGKILL}, {"zookeeper", syscall.SIGKILL}, {"redlock", syscall.SIGINT}, {"zookeeper", syscall.SIGTERM}} {
		t.Run(tc.alg+"/"+tc.sig.String(), func(t *testing.T) {
			tmp := t.TempDir() // the run's servers live under TMPDIR: find them by it
			out := filepath.Join(t.TempDir(), "out")
			cmd := exec.Command(bin, "run", "--algorithm", tc.alg, "--scenario", "baseline", "--duration", "60s", "--out", out, "--quiet")
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			hist := filepath.Join(out, "baseline", tc.alg, "history.jsonl")
			// Stop it once the lock was granted to two clients: a run stopped before any
			// contention is rightly unknown, and its check would not be exit 0.
			deadline := time.Now().Add(30 * time.Second)
			for {
				if grantedClients(hist) >= 2 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("no grants to two clients in the history within 30s")
				}
				time.Sleep(100 * time.Millisecond)
			}
			if len(procsMentioning(tmp)) == 0 {
				t.Fatalf("no server process found under %s while running: the test would prove nothing", tmp)
			}
			start := time.Now()
			cmd.Process.Signal(tc.sig)
			waitErr := cmd.Wait()
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("the harness took %v to stop after %v", took, tc.sig)
			}
			deadline = time.Now().Add(10 * time.Second)
			for len(procsMentioning(tmp)) > 0 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if left := procsMentioning(tmp); len(left) > 0 {
				t.Errorf("server processes survive %v of the harness: %v", tc.sig, left)
			}
			if tc.sig != syscall.SIGKILL {
				if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
					t.Errorf("run directories left in TMPDIR after %v: %d", tc.sig, len(entries))
				}
				if _, err := os.Stat(filepath.Join(filepath.Dir(hist), "report.html")); err != nil {
					t.Errorf("no report after %v (exit %v): %v", tc.sig, waitErr, err)
				}
			}
			code, stdout, stderr := lockchaos(t, "check", filepath.Dir(hist))
			if code != exitValid {
				t.Errorf("check of the stopped run: exit %d, %s %s", code, stdout, stderr)
			}
		})
	}
}

// grantedClients counts the clients the history at path records a granted acquire for.
func grantedClients(path string) int {
	run, err := history.ReadRunFile(path)
	if err != nil {
		return 0
	}
	clients := map[int]bool{}
	for _, op := range run.Ops {
		if op.Op == history.OpAcquire && op.Ok() {
			clients[op.Client] = true
		}
	}
	return len(clients)
}

// procsMentioning lists the command lines of processes whose arguments mention s.
func procsMentioning(s string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
