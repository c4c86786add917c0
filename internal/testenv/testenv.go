// Package testenv holds what the project's tests share about their environment: whether the real
// servers they run against are installed, and what to say when they are not.
package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The test environment's switches, all read here. `make test` sets the three Require variables,
// so CI never passes by skipping; `make test-short` sets cluster.NoServers (LOCKCHAOS_NO_SERVERS),
// which makes cluster.Start refuse, so no server-backed test can start one.
const (
	// RequireServers makes a missing server (redis-server, ZooKeeper, etcd, ...) a failure.
	RequireServers = "LOCKCHAOS_REQUIRE_SERVERS"
	// RequireDocker makes a missing Docker engine or image a failure.
	RequireDocker = "LOCKCHAOS_REQUIRE_DOCKER"
	// RequireBrowser makes a missing headless Chromium a failure.
	RequireBrowser = "LOCKCHAOS_REQUIRE_BROWSER"
)

// Required reports whether the switch (RequireServers, RequireDocker or RequireBrowser) is on.
func Required(name string) bool { return os.Getenv(name) == "1" }

// Missing is what a test does when something it needs is not there (why): it skips, or fails
// when the switch that requires it is on.
func Missing(t testing.TB, name string, why string) {
	t.Helper()
	if Required(name) {
		t.Fatalf("%s=1 but: %s", name, why)
	}
	t.Skipf("skip: %s (%s=1 makes this a failure)", why, name)
}

var once sync.Once

// Servers skips, under -short, a test that starts servers itself (make test-short starts none;
// there cluster.Start refuses, and a test that missed this call fails, naming itself).
func Servers(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts servers: not under -short (make test runs it)")
	}
}

// MissingServer is what a test does when the server it runs against is not installed (err, a
// cluster.ErrMissingBinary): it skips, unless LOCKCHAOS_REQUIRE_SERVERS is 1, where it fails. The
// first skip of a test binary (one package) also prints, once, why the server-backed tests skip
// and how to run them. (testenv imports nothing of the project, so every package's tests can use it.)
func MissingServer(t testing.TB, err error) {
	t.Helper()
	if Required(RequireServers) {
		t.Fatalf("%s=1 but: %v", RequireServers, err)
	}
	once.Do(func() { notify(Notice(err)) })
	t.Skipf("skip: %v", err)
}

// notify prints msg where the user sees it: `go test ./...` shows nothing a passing package's
// tests print (not even on stderr) unless -v, so the notice goes to the terminal when there is one,
// and to stderr otherwise (seen with -v, in CI logs, or when the package fails).
func notify(msg string) {
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if _, err := fmt.Fprintln(tty, msg); err == nil {
			return
		}
	}
	fmt.Fprintln(os.Stderr, msg)
}

// Notice is the one message a package's skipped server-backed tests print.
func Notice(err error) string {
	return fmt.Sprintf("lockchaos tests: the server-backed tests of this package skip: %v. "+
		"Run them with `make test` (installs redis-server, ZooKeeper and the rest, and sets %s=1 so a missing server fails)",
		err, RequireServers)
}

// BuildCLI builds the lockchaos command into the test's temporary directory and returns its path
// (the go command's build cache makes every build after the first a link). Tests that run the
// CLI as a process — to kill it, or to run it as a user does — share this one build step.
func BuildCLI(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lockchaos")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/lockchaos/lockchaos/cmd/lockchaos").CombinedOutput(); err != nil {
		t.Fatalf("build lockchaos: %v\n%s", err, out)
	}
	return bin
}

// quietLogger drops go-redis's log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// QuietRedis silences go-redis's logger: under injected faults its failed dials are expected,
// and each operation's error is in the history. Tests that run faults call it from TestMain.
func QuietRedis() { redis.SetLogger(quietLogger{}) }
