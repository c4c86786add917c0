package locktest

import (
	"slices"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
)

// mine is a user's lock as locktest hands it down: a value on topologies, marking no point.
func mine(topologies []string) algorithms.Info {
	c := defaults()
	c.topologies = topologies
	return userLock(&testing.T{}, func(algorithms.Config) (algorithms.Locker, error) { return nil, nil }, c)
}

// TestWithRenewal: the renewal period a user gives is the user's lock's, so the harness sizes the
// faults that outlast its lease by it (algorithms.Info.RenewalPeriod); without it the lock renews
// nothing.
func TestWithRenewal(t *testing.T) {
	for _, tc := range []struct {
		opts []Option
		want time.Duration
	}{
		{nil, 0},
		{[]Option{WithRenewal(200 * time.Millisecond)}, 200 * time.Millisecond},
	} {
		c := defaults()
		for _, o := range tc.opts {
			o.apply(&c)
		}
		info := userLock(&testing.T{}, func(algorithms.Config) (algorithms.Locker, error) { return nil, nil }, c)
		if got := info.RenewalPeriod(500 * time.Millisecond); got != tc.want {
			t.Errorf("renewal period %v, want %v", got, tc.want)
		}
	}
}

// TestPlanExpectations: safe by default; a catalogue column with WithExpectationsOf; WithExpect
// wins over both.
func TestPlanExpectations(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want map[string]string // scenario → expected, or "skip"
	}{
		{"default", nil, map[string]string{"baseline": "safe", "client-pause": "safe", "restart": "safe",
			"failover": "skip", "getset-race": "skip"}},
		{"like token", []Option{WithExpectationsOf("token"), WithExpect("restart", "safe")},
			map[string]string{"baseline": "safe", "client-pause": "unsafe-client", "restart": "safe", "node-kill": "stuck"}},
		{"sentinel too", []Option{WithTopology("redis-single", "redis-sentinel")}, map[string]string{"failover": "safe"}},
		{"redlock", []Option{WithTopology("redis-multi")}, map[string]string{"restart": "safe", "failover": "skip"}},
		{"zookeeper", []Option{WithTopology("zookeeper"), WithExpectationsOf("zookeeper")},
			map[string]string{"zk-leader-kill": "safe", "partition": "unsafe-client", "clock-jump": "skip"}},
		{"postgres", []Option{WithTopology("postgres")}, map[string]string{"session-kill": "safe", "clock-jump": "skip", "pgbouncer-transaction": "skip"}},
		{"postgres like pg-advisory", []Option{WithTopology("postgres", "postgres-pgbouncer"), WithExpectationsOf("pg-advisory")},
			map[string]string{"session-kill": "unsafe-service", "pgbouncer-transaction": "unsafe-service"}},
		{"mariadb", []Option{WithTopology("mariadb")}, map[string]string{"session-kill": "safe", "pgbouncer-transaction": "skip"}},
		{"redis-cluster", []Option{WithTopology("redis-cluster")}, map[string]string{"session-kill": "skip", "baseline": "safe"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaults()
			for _, o := range tc.opts {
				o.apply(&c)
			}
			plan, err := c.plan(mine(c.topologies))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, it := range plan {
				got[it.cell.Scenario] = it.cell.Expected
				if it.skip != "" {
					got[it.cell.Scenario] = "skip"
				}
			}
			for scen, want := range tc.want {
				if got[scen] != want {
					t.Errorf("%s: %q, want %q", scen, got[scen], want)
				}
			}
		})
	}
}

// TestPlanEveryTopology: locktest takes every topology lockchaos runs (it took 5 of 10), and a
// user's lock that marks no point is never planned a fault at a built-in's point: a user's Redlock
// runs latency through the wire alone, as user-redlock does, rather than wait for Redlock's
// acquire:after-quorum and end unknown.
func TestPlanEveryTopology(t *testing.T) {
	for _, top := range cluster.AllTopologies() {
		c := defaults()
		WithTopology(top.Name).apply(&c)
		plan, err := c.plan(mine(c.topologies))
		if err != nil {
			t.Errorf("%s: %v", top.Name, err)
			continue
		}
		ran := 0
		for _, it := range plan {
			if it.skip != "" {
				continue
			}
			ran++
			for _, f := range it.cell.Faults {
				if f.Wire != nil && top.Wire == "" {
					t.Errorf("%s × %s: fault %s on the wire, which is not parsed there", top.Name, it.cell.Scenario, f.Kind)
				}
				if f.Point != "" && !slices.Contains(cellPoints, f.Point) {
					t.Errorf("%s × %s: fault %s at %q, a point the user's lock does not mark", top.Name, it.cell.Scenario, f.Kind, f.Point)
				}
			}
		}
		if ran == 0 {
			t.Errorf("%s: no scenario runs", top.Name)
		}
	}
}

// cellPoints are the harness's own points, which every lock reaches.
var cellPoints = []string{"cs:before-acquire", "cs:acquired", "cs:before-read", "cs:before-write", "cs:before-release"}
