package locktest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/locktest"
	"github.com/redis/go-redis/v9"
)

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietRedis{}) // dials refused under faults are expected
	os.Exit(m.Run())
}

func neverCalled(algorithms.Config) (algorithms.Locker, error) {
	panic("the factory was called for a scenario that should have been skipped")
}

// TestBadOptions: a mistake in the options fails the test at once, naming it.
func TestBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []locktest.Option
		want string
	}{
		{"unknown scenario", []locktest.Option{locktest.WithScenarios("meteor")}, `unknown scenario "meteor"`},
		{"bad verdict", []locktest.Option{locktest.WithExpect("baseline", "fine")}, `WithExpect("baseline", "fine"): want one of safe`},
		{"expect unknown scenario", []locktest.Option{locktest.WithExpect("meteor", "safe")}, `unknown scenario "meteor"`},
		{"unknown topology", []locktest.Option{locktest.WithTopology("mongo")}, `topology "mongo"`},
		{"no topology", []locktest.Option{locktest.WithTopology()}, "at least one topology"},
		{"expectations of unknown", []locktest.Option{locktest.WithExpectationsOf("nope")}, `unknown algorithm "nope"`},
		{"expectations of other topology", []locktest.Option{locktest.WithExpectationsOf("zookeeper")}, "zookeeper runs on [zookeeper], the lock on redis-single"},
		{"negative clients", []locktest.Option{locktest.WithClients(-1)}, "WithClients(-1)"},
		{"negative renewal", []locktest.Option{locktest.WithRenewal(-time.Second)}, "WithRenewal(-1s): want the lock's renewal period"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := capture(t, func(tb testing.TB) { locktest.Run(tb, neverCalled, tc.opts...) })
			if !c.failed || !strings.Contains(c.fatal, tc.want) {
				t.Errorf("fatal %q (failed %v), want it to say %q", c.fatal, c.failed, tc.want)
			}
		})
	}
}

// TestSkipsWithReason: scenarios that do not apply to the lock's topology are skipped with the
// catalogue's reason, and no server is started for them.
func TestSkipsWithReason(t *testing.T) {
	c := capture(t, func(tb testing.TB) {
		locktest.Run(tb, neverCalled, locktest.WithScenarios("failover", "getset-race", "zk-leader-kill"))
	})
	if c.failed || c.skipped != "" {
		t.Fatalf("failed %v (%q %q), skipped %q; want three skip logs", c.failed, c.errors, c.fatal, c.skipped)
	}
	want := []string{
		`failover: skipped: failover runs on redis-sentinel and the lock is tested on redis-single; a factory that handles it says so with WithTopology("redis-single", "redis-sentinel")`,
		"getset-race: skipped: n/a on redis-single: the race is GETSET's own (the catalogue's reason for token)",
		// The lock's own cell on its topology says why first: the topology's descriptor lacks a leader.
		"zk-leader-kill: skipped: n/a on redis-single: restart on the leader: its servers (redis-single) have no leader among their nodes",
	}
	if !slices.Equal(c.logs, want) {
		t.Errorf("logs\n%q\nwant\n%q", c.logs, want)
	}

	// With a *testing.T they are skipped subtests.
	t.Run("subtests", func(t *testing.T) {
		locktest.Run(t, neverCalled, locktest.WithScenarios("zk-leader-kill"))
	})
}

// TestNothingRegistered: Run hands the user's lock down as a value; no algorithm is registered
// for it, not even while it runs.
func TestNothingRegistered(t *testing.T) {
	before := algorithms.Names()
	var during []string
	t.Run("run", func(t *testing.T) {
		locktest.Run(t, neverCalled, locktest.WithScenarios("zk-leader-kill"))
		during = algorithms.Names()
	})
	if !slices.Equal(during, before) || !slices.Equal(algorithms.Names(), before) {
		t.Errorf("algorithms registered: before %v, during %v, after %v", before, during, algorithms.Names())
	}
}

// TestFactoryErrors: a factory that cannot serve the scenario skips it with ErrUnsupported; one
// that panics or fails fails the scenario, saying why.
func TestFactoryErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	for _, tc := range []struct {
		name    string
		factory locktest.Factory
		skip    string
		fail    string
	}{
		{"unsupported", func(algorithms.Config) (algorithms.Locker, error) {
			return nil, fmt.Errorf("this lock needs Sentinel: %w", locktest.ErrUnsupported)
		}, "this lock needs Sentinel: locktest: unsupported", ""},
		{"panic", func(cfg algorithms.Config) (algorithms.Locker, error) {
			_ = cfg.Addrs[7]
			return nil, nil
		}, "", "factory panicked: runtime error: index out of range [7]"},
		{"error", func(algorithms.Config) (algorithms.Locker, error) {
			return nil, errors.New("no connection string")
		}, "", "no connection string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := capture(t, func(tb testing.TB) {
				locktest.Run(tb, tc.factory, locktest.WithScenarios("baseline"), locktest.WithDuration(100*time.Millisecond))
			})
			if strings.Contains(c.skipped, "missing server binary") {
				t.Skip(c.skipped)
			}
			switch {
			case tc.skip != "":
				if len(c.logs) != 1 || !strings.Contains(c.logs[0], tc.skip) || c.failed {
					t.Errorf("logs %q errors %q, want a skip saying %q", c.logs, c.errors, tc.skip)
				}
			default:
				if len(c.errors) != 1 || !strings.Contains(c.errors[0], tc.fail) ||
					!strings.HasPrefix(c.errors[0], "baseline: the run could not be carried out: client 1: ") {
					t.Errorf("errors %q, want one saying %q", c.errors, tc.fail)
				}
			}
		})
	}
}
