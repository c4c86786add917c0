package locktest_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/testenv"
)

// TestOutOfTree builds the locks of testdata/userlocks — written as users write them with
// go-redis, go-zookeeper, etcd's clientv3, pgx and go-sql-driver/mysql, no Config.Point call —
// as a module of its own (example.com/userlocks, its go.mod replacing lockchaos by this checkout,
// built offline from the module cache with this repository's go.sum) and runs its tests there,
// as a user runs theirs: locktest.Run tests a correct lock on every topology against the
// topology's reference lock's expectations, and buggy twins that the scenario naming their bug
// must catch. The inner `go test` fails when any of them does otherwise (and, with
// LOCKCHAOS_REQUIRE_SERVERS=1, when a server is missing); its output is logged.
//
// USERLOCKS_SCENARIOS (all, or a comma-separated list), USERLOCKS_TOPOLOGIES and USERLOCKS_RUN
// (the inner -run) narrow or widen it; LOCKCHAOS_REPORTS keeps the reports.
func TestOutOfTree(t *testing.T) {
	testenv.Servers(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	srcs, err := filepath.Glob(filepath.Join("testdata", "userlocks", "*.go"))
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no sources in testdata/userlocks (%v)", err)
	}
	for _, src := range srcs {
		copyFile(t, src, filepath.Join(mod, filepath.Base(src)))
	}
	copyFile(t, filepath.Join(root, "go.sum"), filepath.Join(mod, "go.sum"))
	ours, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go \S+$`).Find(ours)
	// One replace, onto the checkout, as a user's module has it before a release: nothing else
	// (the patched toxiproxy is a package of lockchaos's own module, third_party/toxiproxy).
	gomod := "module example.com/userlocks\n\n" + string(goLine) + "\n\n" +
		"require github.com/lockchaos/lockchaos v0.0.0-00010101000000-000000000000\n\n" +
		"replace github.com/lockchaos/lockchaos => " + root + "\n"
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}

	timeout := 25 * time.Minute
	if dl, ok := t.Deadline(); ok {
		timeout = time.Until(dl) - 30*time.Second // the inner run ends first, with its own report
	}
	args := []string{"test", "-count=1", "-p=1", "-v", "-timeout=" + timeout.Round(time.Second).String()}
	if run := os.Getenv("USERLOCKS_RUN"); run != "" {
		args = append(args, "-run="+run)
	}
	cmd := exec.CommandContext(t.Context(), goBin, append(args, ".")...)
	cmd.Dir = mod
	// Offline: every module comes from the cache, as this repository's go.sum pins them; -mod=mod
	// lets go add the user's direct requirements to its go.mod.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	t.Logf("go %s in %s (%s):\n%s", strings.Join(args, " "), mod, time.Since(start).Round(time.Second), out.String())
	switch {
	case err != nil:
		t.Fatalf("the out-of-tree module's tests failed: %v (output above)", err)
	case !strings.Contains(out.String(), "--- PASS: Test"):
		// Nothing ran to a pass: every test skipped (no servers), or none was chosen.
		if testenv.Required(testenv.RequireServers) || !strings.Contains(out.String(), "--- SKIP") {
			t.Fatal("no test of the out-of-tree module passed (output above)")
		}
		t.Skip("the out-of-tree module's tests skipped: servers missing (output above)")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}
