// Package testenv holds what the project's tests share about their environment: whether the real
// servers they run against are installed, and what to say when they are not.
package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// RequireServers is the variable that makes a missing server a failure instead of a skip
// (`make test` sets it, so CI never passes by skipping).
const RequireServers = "LOCKCHAOS_REQUIRE_SERVERS"

var once sync.Once

// MissingServer is what a test does when the server it runs against is not installed (err, a
// cluster.ErrMissingBinary): it skips, unless LOCKCHAOS_REQUIRE_SERVERS is 1, where it fails. The
// first skip of a test binary (one package) also prints, once, why the server-backed tests skip
// and how to run them. (testenv imports nothing of the project, so every package's tests can use it.)
func MissingServer(t testing.TB, err error) {
	t.Helper()
	if os.Getenv(RequireServers) == "1" {
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
