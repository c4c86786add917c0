package testenv_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

const childEnv = "TESTENV_CHILD"

// TestChildSkips runs only in the child of TestSkipNoticeOnce: two tests that skip for a missing
// server.
func TestChildSkips(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("helper of TestSkipNoticeOnce")
	}
	for i := range 2 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			testenv.MissingServer(t, fmt.Errorf("%w: redis-server not found", cluster.ErrMissingBinary))
			t.Error("not skipped")
		})
	}
}

// TestSkipNoticeOnce: without LOCKCHAOS_REQUIRE_SERVERS the tests skip and the package says once
// why and how to run them; with it they fail.
func TestSkipNoticeOnce(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("parent only")
	}
	child := func(require string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestChildSkips$", "-test.v", "-test.count", "1")
		cmd.Env = append(os.Environ(), childEnv+"=1", testenv.RequireServers+"="+require)
		// A new session has no terminal: the notice goes to stderr, where this test reads it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := child("")
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	if n := strings.Count(out, "Run them with `make test`"); n != 1 {
		t.Errorf("the notice is printed %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "--- SKIP"); n < 2 {
		t.Errorf("%d skips, want both subtests skipped:\n%s", n, out)
	}
	out, err = child("1")
	if err == nil || !strings.Contains(out, "LOCKCHAOS_REQUIRE_SERVERS=1 but") {
		t.Errorf("with LOCKCHAOS_REQUIRE_SERVERS=1 a missing server must fail: err %v\n%s", err, out)
	}
}
