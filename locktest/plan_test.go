package locktest

import "testing"

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
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaults()
			for _, o := range tc.opts {
				o.apply(&c)
			}
			plan, err := c.plan()
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
