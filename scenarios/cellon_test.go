package scenarios

import (
	"testing"

	"github.com/lockchaos/lockchaos/algorithms"
)

// TestCellOn: a cell on a chosen topology runs there, takes that topology's variants and its
// ExpectOn column, and expects nothing where no column was measured — unless the chosen topology
// is the one the cell runs on anyway.
func TestCellOn(t *testing.T) {
	cases := []struct {
		alg, scenario, topology string
		wantTopology, expected  string
	}{
		{"token", "failover", "redis-cluster", "redis-cluster", "unsafe-service"},
		{"token", "node-kill", "redis-cluster", "redis-cluster", "safe"},
		{"token", "node-kill", "", "", "stuck"},
		{"token", "failover", "redis-sentinel", "redis-sentinel", "unsafe-service"}, // its natural topology
		{"token", "node-kill", "redis-sentinel", "redis-sentinel", "safe"},          // its ExpectOn column
		{"token+fence", "node-kill", "redis-sentinel", "redis-sentinel", ""},        // not measured there
		{"token+wait", "failover", "", "redis-sentinel", "stuck"},
		{"token+wait", "failover", "redis-cluster", "redis-cluster", "safe"},
		{"token+wait-ignore", "failover", "redis-cluster", "redis-cluster", "unsafe-service"},
	}
	for _, tc := range cases {
		s := must(tc.scenario)
		c, err := s.CellOn(tc.alg, tc.topology)
		if err != nil {
			t.Fatalf("%s × %s on %q: %v", tc.alg, tc.scenario, tc.topology, err)
		}
		if c.Topology != tc.wantTopology || c.Expected != tc.expected || c.On != tc.topology {
			t.Errorf("%s × %s on %q: topology %q, expected %q, on %q; want %q, %q, %q",
				tc.alg, tc.scenario, tc.topology, c.Topology, c.Expected, c.On, tc.wantTopology, tc.expected, tc.topology)
		}
	}
	// The cluster's own failover variant replaces the sentinel one: the killed master restarts.
	c, _ := must("failover").CellOn("token+wait", "redis-cluster")
	if len(c.Faults) != 2 || c.Faults[1].Kind != "restart" || c.Faults[1].Nodes != "redis-2" {
		t.Errorf("token+wait × failover on redis-cluster: faults %+v, want the kill and the restart of redis-2", c.Faults)
	}
}

// TestCellOnTopologiesThatCannotShowIt: a scenario that only some topologies' servers can show
// (a session the harness ends, an idle timeout, a pooler) is n/a for a lock on any other, whether
// chosen with --topology or its default — never a run that could not fail (a user's lock on
// redis-cluster ran session-kill as unknown and pgbouncer-transaction as a plain, "safe",
// baseline); on a topology that can show it the cell runs, with its expectation.
func TestCellOnTopologiesThatCannotShowIt(t *testing.T) {
	for _, tc := range []struct {
		alg, scenario, topology string
		na                      bool
		expected                string
	}{
		{"user-token", "session-kill", "redis-cluster", true, ""},
		{"user-token", "server-idle-timeout", "redis-cluster", true, ""},
		{"user-token", "pgbouncer-transaction", "redis-cluster", true, ""},
		{"pg-advisory", "pgbouncer-transaction", "postgres-standby", true, ""},
		{"pg-advisory", "pgbouncer-transaction", "", false, "unsafe-service"},
		{"pg-advisory", "session-kill", "postgres-standby", false, "unsafe-service"},
		{"user-token", "partition", "redis-cluster", false, ""},
		{"mysql-get-lock", "pgbouncer-transaction", "", true, ""},
		{"pg-advisory", "clock-jump", "", true, ""},
	} {
		c, err := must(tc.scenario).CellOn(tc.alg, tc.topology)
		if tc.alg == "user-token" {
			// A user's lock on redis-cluster, as locktest hands it down: a value, in no registry.
			mine := algorithms.Info{Name: "mine", Topologies: []string{tc.topology}}
			c, err = must(tc.scenario).CellFor(mine, "")
		}
		if err != nil {
			t.Fatalf("%s × %s on %q: %v", tc.alg, tc.scenario, tc.topology, err)
		}
		if (c.NA != "") != tc.na || c.Expected != tc.expected {
			t.Errorf("%s × %s on %q: n/a %q, expected %q; want n/a %v, expected %q", tc.alg, tc.scenario, tc.topology, c.NA, c.Expected, tc.na, tc.expected)
		}
	}
	// An expectation of a run on a topology the scenario cannot run on is a table's mistake.
	s := must("session-kill")
	s.Expect = map[string]string{"token": "S: a Redis lock has no session"}
	if _, err := s.CellOn("token", ""); err == nil {
		t.Error("session-kill expected safe of token on redis-single: want an error (n/a is the only expectation there)")
	}
}
