package reports

import (
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// The property table picks the runs that measure a property by what their faults do, whatever
// the scenarios are called.
func TestPropertiesByFaultMeaning(t *testing.T) {
	crash := []checker.PlannedFault{{Rule: 1, Kind: "poof", ActsOn: history.ActsOnProcess, Lasting: true, Fired: true, Times: 1}}
	gone := []checker.PlannedFault{{Rule: 1, Kind: "unplug", ActsOn: history.ActsOnServers, Lasting: true, Fired: true, Times: 1}}
	pause := []checker.PlannedFault{{Rule: 1, Kind: "client-crash", ActsOn: history.ActsOnProcess, Fired: true, Times: 1}}
	cell := func(scen string, v checker.Verdict, planned []checker.PlannedFault, tput float64) Cell {
		r := res("lock", scen, v, checker.ServiceClass)
		r.FaultsPlanned, r.ThroughputCSPerS = planned, tput
		return Cell{Scenario: scen, Algorithm: "lock", Result: r}
	}
	_, rows := properties([]string{"lock"}, []Cell{
		cell("vanish", checker.Stuck, crash, 10),
		cell("client-crash", checker.Safe, pause, 20), // a pause, whatever its name: measures no crash
		cell("blackout", checker.Safe, gone, 30),
		cell("quiet", checker.Safe, []checker.PlannedFault{}, 40),
	})
	got := rows[0].Cells
	for i, want := range map[int]string{1: "no — stuck after the holder crashed", 2: "yes (blackout)", 4: "1.5 ms / 7 ms (quiet)", 5: "40.0 critical sections/s (quiet)"} {
		if got[i].Text != want {
			t.Errorf("property %d = %q, want %q", i, got[i].Text, want)
		}
	}
	_, rows = properties([]string{"lock"}, []Cell{cell("client-crash", checker.Safe, pause, 20), cell("b", checker.Safe, pause, 30), cell("c", checker.Safe, pause, 50)})
	got = rows[0].Cells
	for i, want := range map[int]string{1: "not measured (no run crashed a client)", 2: "not measured (no run killed a node for good)",
		5: "30.0 critical sections/s (b, no run without faults)"} {
		if got[i].Text != want {
			t.Errorf("without crash, kill or fault-free runs: property %d = %q, want %q", i, got[i].Text, want)
		}
	}
}
