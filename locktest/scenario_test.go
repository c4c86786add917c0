package locktest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/locktest"
	"github.com/lockchaos/lockchaos/scenarios"
)

// getThenDelLock releases in two commands: GET the key, and when it holds this client's token,
// DEL it — the weak spot is between the two, which it names with Config.Point. With atomic set it
// releases by the Lua compare-and-delete instead, passing the same point first.
type getThenDelLock struct {
	*redisLock
	point  algorithms.PointFunc
	atomic bool
}

func (l *getThenDelLock) Release(ctx context.Context, lease algorithms.Lease) error {
	if l.atomic {
		if err := l.point(ctx, "release:after-get"); err != nil {
			return err
		}
		return l.redisLock.Release(ctx, lease)
	}
	v, err := l.rdb.Get(ctx, l.key).Result()
	if err != nil || v != lease.Data {
		return algorithms.ErrNotHeld
	}
	if err := l.point(ctx, "release:after-get"); err != nil {
		return err
	}
	return l.rdb.Del(ctx, l.key).Err()
}

func getThenDel(atomic bool) locktest.Factory {
	return func(cfg algorithms.Config) (algorithms.Locker, error) {
		return &getThenDelLock{redisLock: newRedisLock(cfg, true), point: cfg.Point, atomic: atomic}, nil
	}
}

// pauseAfterGet aims a pause at the lock's own named point, between its GET and its DEL, for
// longer than the TTL: the lease expires, the other client takes the lock and, holding it for
// most of its time, very likely holds it again when the late DEL removes its key; the paused
// client, released, acquires at once, while the other still holds. Two clients, so the one that
// acquires after the DEL is the one that made it, without waiting its turn (timing on a loaded
// machine made a five-client version miss).
const pauseAfterGet = `scenarios:
  - name: pause-after-get
    summary: the releasing holder pauses between its GET and its DEL for longer than the TTL
    workload: {clients: 2, ttl: 500ms, hold: 400ms, duration: 2s}
    faults:
      - {kind: client-pause, point: "release:after-get", for: 700ms}
`

// TestOwnScenario: a scenario of the user's own, aimed at a point only their lock has, catches a
// non-atomic GET-then-DEL release (read from a file with WithScenarioFile) and passes the atomic
// compare-and-delete (given as a struct with WithScenario). Real servers.
func TestOwnScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real redis-server")
	}
	file := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(file, []byte(pauseAfterGet), 0o644); err != nil {
		t.Fatal(err)
	}
	c := capture(t, func(tb testing.TB) {
		locktest.Run(tb, getThenDel(false), locktest.WithScenarioFile(file), locktest.WithOut(t.TempDir()))
	})
	if c.skipped != "" {
		t.Skip(c.skipped)
	}
	if !c.failed || len(c.errors) != 1 || !strings.HasPrefix(c.errors[0], "pause-after-get: verdict unsafe") {
		t.Fatalf("the non-atomic release was not caught by the scenario from the file (failed %v, errors %q, logs %q)",
			c.failed, c.errors, c.logs)
	}
	if len(c.logs) != 0 {
		t.Errorf("only the file's scenario should run (the catalogue's are not asked for), logged %q", c.logs)
	}

	ss, err := scenarios.Parse([]byte(pauseAfterGet))
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	s.Name = "pause-after-get-struct"
	if s.Faults[0].For.D() != 700*time.Millisecond || s.Faults[0].Kind != "client-pause" {
		t.Fatalf("parsed fault %+v", s.Faults[0])
	}
	c = capture(t, func(tb testing.TB) { locktest.Run(tb, getThenDel(true), locktest.WithScenario(s)) })
	if c.failed || len(c.logs) != 1 || !strings.HasPrefix(c.logs[0], "pause-after-get-struct: verdict safe") {
		t.Errorf("the atomic release under the same fault: failed %v, errors %q, logs %q; want one pass", c.failed, c.errors, c.logs)
	}
}

// TestPointFreeGetThenDel: the same two locks, marking no point at all (Config.Point never
// called), against the catalogue's own slow-release as locktest runs it by default: the fault
// holds the first reply of a release on the wire until another client holds the lock
// (docs/design.md#wire-points), so the GET-then-DEL release is caught and the compare-and-delete passes — no scenario of
// the user's own, no help from the lock's code. Real servers.
func TestPointFreeGetThenDel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real redis-server")
	}
	pointFree := func(atomic bool) locktest.Factory {
		return func(cfg algorithms.Config) (algorithms.Locker, error) {
			return &getThenDelLock{redisLock: newRedisLock(cfg, true), point: algorithms.NoPoint, atomic: atomic}, nil
		}
	}
	// The first violation is the service's (the late DEL removed the next holder's key); a run
	// may show the client class too ("service class; classes seen [service client]"). Caught in
	// one of two runs: under make test's full load one run was safe with 13 of 33 acquires
	// timed out (the catch rate is the selftest's and make reproduce's to measure).
	var c *captured
	for try := 1; try <= 2; try++ {
		c = capture(t, func(tb testing.TB) {
			locktest.Run(tb, pointFree(false), locktest.WithScenarios("slow-release"), locktest.WithOut(t.TempDir()))
		})
		if c.skipped != "" {
			t.Skip(c.skipped)
		}
		if c.failed && len(c.errors) == 1 && strings.HasPrefix(c.errors[0], "slow-release: verdict unsafe (service class") {
			break
		}
		t.Logf("run %d: not caught (failed %v, errors %q, logs %q)", try, c.failed, c.errors, c.logs)
		if try == 2 {
			t.Fatalf("the point-free GET-then-DEL release was not caught by slow-release in 2 runs")
		}
	}
	c = capture(t, func(tb testing.TB) {
		locktest.Run(tb, pointFree(true), locktest.WithScenarios("slow-release"), locktest.WithOut(t.TempDir()))
	})
	if c.failed || len(c.logs) != 1 || !strings.HasPrefix(c.logs[0], "slow-release: verdict safe") {
		t.Errorf("the point-free compare-and-delete in slow-release: failed %v, errors %q, logs %q; want a pass with evidence",
			c.failed, c.errors, c.logs)
	}
}

// TestOwnScenarioBadInput: a scenario of one's own that is broken or shadows the catalogue fails
// the test at once, naming it.
func TestOwnScenarioBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  locktest.Option
		want string
	}{
		{"missing file", locktest.WithScenarioFile("/nonexistent/mine.yaml"), "WithScenarioFile: scenario file"},
		{"catalogue name", locktest.WithScenario(scenarios.Scenario{Name: "baseline", Summary: "mine"}), `WithScenario("baseline"): the name is taken`},
		{"invalid", locktest.WithScenario(scenarios.Scenario{Summary: "no name"}), `WithScenario("")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := capture(t, func(tb testing.TB) { locktest.Run(tb, neverCalled, tc.opt) })
			if !c.failed || !strings.Contains(c.fatal, tc.want) {
				t.Errorf("fatal %q (failed %v), want it to say %q", c.fatal, c.failed, tc.want)
			}
		})
	}
}
