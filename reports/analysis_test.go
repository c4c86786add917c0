package reports

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
)

// TestWriteAnalysis: a lock's scenarios each show the worst of their runs with its tally against
// the expectation; an unsafe or stuck scenario is a finding with its first violation, the
// published source its comment cites and what to do about its class; n/a scenarios say why.
func TestWriteAnalysis(t *testing.T) {
	dir := t.TempDir()
	safe := res("token", "baseline", checker.Safe, "")
	pause := res("token", "client-pause", checker.Unsafe, checker.ClientClass)
	pause.FirstViolation = &checker.Violation{Kind: "exclusion", Class: checker.ClientClass, AtMs: 900,
		Explanation: "client 2's write came after its lease ended", Cause: "a client-pause from 400 ms"}
	pause.LostUpdates = 2
	cells := []Cell{
		{Scenario: "baseline", Algorithm: "token", Run: 1, Dir: "baseline/token/run-1", Result: safe, Expected: "S"},
		{Scenario: "baseline", Algorithm: "token", Run: 2, Dir: "baseline/token/run-2", Result: safe, Expected: "S"},
		{Scenario: "client-pause", Algorithm: "token", Run: 1, Dir: "client-pause/token/run-1", Result: safe, Expected: "Uc"},
		{Scenario: "client-pause", Algorithm: "token", Run: 2, Dir: "client-pause/token/run-2", Result: pause, Expected: "Uc"},
		{Scenario: "getset-race", Algorithm: "token", NA: "the race is GETSET's own"},
	}
	meta := AnalysisMeta{Algorithm: "token", Summary: "SET NX PX with a token", Source: "seed 003", Runs: 2, Seed: 7,
		Command: "lockchaos analyze --algorithm token --runs 2", Scenarios: []AnalysisScenario{
			{Name: "baseline", Summary: "No faults."},
			{Name: "client-pause", Summary: "The holder pauses.", Why: "the GC pause (https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html)"},
			{Name: "getset-race", Summary: "GETSET races."},
			{Name: "never-ran", Summary: "A scenario without cells is left out."},
		}}
	if err := WriteAnalysis(dir, cells, meta); err != nil {
		t.Fatal(err)
	}
	page := readFile(t, filepath.Join(dir, AnalysisFile))
	for _, want := range []string{
		`<tr id="s-baseline" data-verdict="safe">`, "2 of 2 safe", "2 of 2 as expected",
		`<tr id="s-client-pause" data-verdict="unsafe-client">`, "1 of 2 unsafe-client", "1 of 2 as expected",
		`<a href="https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html">`,
		`id="f-client-pause"`, "client 2&#39;s write came after its lease ended", "a client-pause from 400 ms",
		"<b>2 updates lost</b>", `href="client-pause/token/run-2/report.html"`, "fencing tokens, checked by the resource",
		"the race is GETSET&#39;s own", "3 of 4 runs as expected", "lockchaos analyze --algorithm token --runs 2",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("analysis.html lacks %q", want)
		}
	}
	for _, unwanted := range []string{"never-ran", `id="f-baseline"`, "the GC pause (https:"} {
		if strings.Contains(page, unwanted) {
			t.Errorf("analysis.html has %q", unwanted)
		}
	}
}
