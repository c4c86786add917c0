package runner_test

import (
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestFenceUncheckedConfig: the fence-unchecked mutant runs with the resource's fence check off,
// its real algorithm with it on, in the same scenario.
func TestFenceUncheckedConfig(t *testing.T) {
	s, err := scenarios.Lookup("client-pause")
	if err != nil {
		t.Fatal(err)
	}
	for alg, want := range map[string]bool{"token+fence": true, "fence-unchecked": false} {
		cell, err := s.Cell(alg)
		if err != nil {
			t.Fatal(err)
		}
		if got := runner.Config(cell, runner.Options{}, 0).Fencing; got != want {
			t.Errorf("%s: Fencing %v, want %v", alg, got, want)
		}
	}
}

// TestReleaseTimeoutConfig: a scenario file's release_timeout reaches the harness apart from
// acquire_timeout (slow-release × getset stops its releaser for longer than its acquires wait),
// and a cell without one leaves it to the harness's default (the acquire timeout).
func TestReleaseTimeoutConfig(t *testing.T) {
	ss, err := scenarios.Parse([]byte(`
scenarios:
  - name: slow-releaser
    workload: {acquire_timeout: 300ms, release_timeout: 3s}
    expect: {token: S}
  - name: plain
    expect: {token: S}
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ acquire, release time.Duration }{{300 * time.Millisecond, 3 * time.Second}, {0, 0}} {
		c, err := ss[i].Cell("token")
		if err != nil {
			t.Fatal(err)
		}
		w := runner.Config(c, runner.Options{}, 1).Workload
		if w.AcquireTimeout != want.acquire || w.ReleaseTimeout != want.release {
			t.Errorf("%s: acquire timeout %v, release timeout %v; want %v, %v", ss[i].Name, w.AcquireTimeout,
				w.ReleaseTimeout, want.acquire, want.release)
		}
	}
}
