package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	toxiclient "github.com/lockchaos/lockchaos/third_party/toxiproxy/client"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/external"
	"github.com/lockchaos/lockchaos/internal/exttest"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// TestExternalBadInput: a wrong cluster file, an unreachable node or toxiproxy API, or a fault
// whose control the file lacks is one line naming it and the fix, exit 254, and no run directory.
func TestExternalBadInput(t *testing.T) {
	dir := t.TempDir()
	dead := fmt.Sprintf("127.0.0.1:%d", exttest.FreePort(t))
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unknownField := write("field.yaml", "nodes:\n  - name: redis-1\n    kind: redis\n    address: 127.0.0.1:1\n    toxiproxy_api: 127.0.0.1:2\n")
	unknownKind := write("kind.yaml", "nodes:\n  - name: db\n    kind: mysql\n    address: 127.0.0.1:3306\n")
	deadNode := write("dead.yaml", fmt.Sprintf("nodes:\n  - {name: redis-1, kind: redis, address: %q}\n", dead))
	zk := write("zk.yaml", "nodes:\n  - {name: zk-1, kind: zookeeper, address: 127.0.0.1:2181}\n")

	type tc struct {
		name string
		args []string
		want string
	}
	cases := []tc{
		{"no cluster file", []string{"run", "--algorithm", "token", "--backend", "external"}, "needs --cluster FILE"},
		{"cluster without external", []string{"run", "--algorithm", "token", "--cluster", deadNode}, "--cluster is for --backend external"},
		{"missing file", []string{"run", "--algorithm", "token", "--backend", "external", "--cluster", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{"unknown field", []string{"run", "--algorithm", "token", "--backend", "external", "--cluster", unknownField}, "line 5: field toxiproxy_api not found"},
		{"unknown kind", []string{"run", "--algorithm", "token", "--backend", "external", "--cluster", unknownKind}, `line 2: node db: unknown kind "mysql"`},
		{"wrong topology", []string{"run", "--algorithm", "token", "--backend", "external", "--cluster", zk}, "holds a zookeeper cluster"},
		{"unreachable node", []string{"run", "--algorithm", "token", "--backend", "external", "--cluster", deadNode}, "node redis-1 (redis) at " + dead + " is unreachable"},
		{"no toxiproxy for partition", []string{"run", "--algorithm", "token", "--scenario", "partition", "--backend", "external", "--cluster", deadNode}, "node redis-1 has no toxiproxy in cluster file " + deadNode + " (add toxiproxy: HOST:8474"},
		{"no restart command", []string{"run", "--algorithm", "token", "--scenario", "restart", "--backend", "external", "--cluster", deadNode}, "node redis-1 has no restart"},
		{"doctor: unknown kind", []string{"doctor", "--cluster", unknownKind}, "unknown kind"},
	}
	// An unreachable toxiproxy API next to a live node.
	if _, err := exec.LookPath("redis-server"); !testing.Short() && (err == nil || testenv.Required(testenv.RequireServers)) {
		r := exttest.StartRedis(t)
		deadAPI := write("deadapi.yaml", fmt.Sprintf("nodes:\n  - {name: redis-1, kind: redis, address: %q, toxiproxy: %q}\n", r.Addr, dead))
		cases = append(cases, tc{"unreachable toxiproxy", []string{"run", "--algorithm", "token", "--scenario", "partition", "--backend", "external", "--cluster", deadAPI}, "toxiproxy at " + dead + " is unreachable"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := c.args
			if c.args[0] != "doctor" { // doctor writes nothing and takes no --out
				args = append(args, "--out", out)
			}
			code, stdout, errOut := lockchaos(t, args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", code, exitUsage, stdout, errOut)
			}
			// The run's banner line aside, the error is one line.
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			last := lines[len(lines)-1]
			if !strings.Contains(last, c.want) || strings.Contains(errOut, "panic") {
				t.Errorf("stderr %q does not say %q", errOut, c.want)
			}
			if len(lines) > 2 || (len(lines) == 2 && !strings.Contains(lines[0], " on external, seed ")) {
				t.Errorf("want one error line, got %q", errOut)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("bad input left %s behind (%v)", out, err)
			}
		})
	}
}

// TestDoctorCluster: doctor --cluster says which node and API answer, exit 1 when one does not.
func TestDoctorCluster(t *testing.T) {
	r := exttest.StartRedis(t)
	tp := exttest.Toxiproxy(t)
	dead := fmt.Sprintf("127.0.0.1:%d", exttest.FreePort(t))
	dir := t.TempDir()
	good := exttest.WriteClusterFile(t, dir, exttest.Node{Name: "redis-1", Kind: "redis", Address: r.Addr, Toxiproxy: tp})
	// A proxy a killed run of this host left (its pid cannot be alive).
	stale := cluster.ProxyPrefix + strings.Split(external.NewRunID(), "-")[0] + "-99999999-abcdef-c1-redis-1"
	if _, err := toxiclient.NewClient(tp).CreateProxy(stale, "127.0.0.1:0", r.Addr); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := lockchaos(t, "doctor", "--cluster", good)
	if code != exitValid || !strings.Contains(out, "ok          node redis-1 (redis)") || !strings.Contains(out, "ok          toxiproxy") ||
		!strings.Contains(out, "holds 1 lockchaos proxies (1 of killed runs on this host") {
		t.Errorf("doctor of a good file: exit %d\n%s%s", code, out, errOut)
	}
	bad := exttest.WriteClusterFile(t, t.TempDir(),
		exttest.Node{Name: "redis-1", Kind: "redis", Address: r.Addr, Toxiproxy: dead},
		exttest.Node{Name: "redis-2", Kind: "redis", Address: dead})
	code, out, errOut = lockchaos(t, "doctor", "--cluster", bad)
	if code != exitInvalid || !strings.Contains(out, "UNREACHABLE node redis-2") || !strings.Contains(out, "UNREACHABLE toxiproxy") ||
		!strings.Contains(out, "ok          node redis-1") {
		t.Errorf("doctor of a file with a dead node and API: exit %d\n%s%s", code, out, errOut)
	}
}

// TestExternalKilledRunLeavesNoProxies: lockchaos stopped by Ctrl-C removes its proxies; killed
// with SIGKILL it cannot, and the next run with the same cluster file removes them, says so, and
// leaves none of its own.
func TestExternalKilledRunLeavesNoProxies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and runs it against real servers")
	}
	r := exttest.StartRedis(t)
	tp := exttest.Toxiproxy(t)
	dir := t.TempDir()
	file := exttest.WriteClusterFile(t, dir, exttest.Node{Name: "redis-1", Kind: "redis", Address: r.Addr, Toxiproxy: tp})
	bin := testenv.BuildCLI(t)
	args := []string{"run", "--algorithm", "token", "--scenario", "baseline", "--backend", "external", "--cluster", file,
		"--proxy", "always", "--clients", "3", "--out", filepath.Join(dir, "out")}
	// midRun starts a long run and signals it once its proxies exist.
	midRun := func(sig syscall.Signal) {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--duration", "60s")...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(exttest.Proxies(t, tp, cluster.ProxyPrefix)) < 3 {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("the run made no proxies in 30s: %s", stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // mid-run
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}
	// Ctrl-C: the run ends through its normal exit and removes its proxies.
	midRun(syscall.SIGINT)
	if left := exttest.Proxies(t, tp, cluster.ProxyPrefix); len(left) > 0 {
		t.Errorf("after Ctrl-C the toxiproxy-server still has %v", left)
	}
	midRun(syscall.SIGKILL)
	left := exttest.Proxies(t, tp, cluster.ProxyPrefix)
	if len(left) != 3 {
		t.Fatalf("after SIGKILL the toxiproxy-server has %v, want the run's 3 proxies", left)
	}

	next := exec.Command(bin, append(args, "--duration", "1s")...)
	var stderr bytes.Buffer
	next.Stderr = &stderr
	err := next.Run()
	if code := next.ProcessState.ExitCode(); code == exitUsage || code == exitHarness {
		t.Fatalf("next run: exit %d (%v): %s", code, err, stderr.String())
	}
	if want := fmt.Sprintf("removed 3 stale lockchaos proxies of killed runs from toxiproxy %s", tp); !strings.Contains(stderr.String(), want) {
		t.Errorf("next run's stderr %q does not say %q", stderr.String(), want)
	}
	if left := exttest.Proxies(t, tp, cluster.ProxyPrefix); len(left) > 0 {
		t.Errorf("proxies left after the next run: %v", left)
	}
}
