package reports

import (
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

func res(algo, scen string, v checker.Verdict, class checker.Class) *checker.Result {
	r := &checker.Result{Algorithm: algo, Scenario: scen, Verdict: v, DurationMs: 10000, AcquiresOk: 100,
		AcquireLatencyMs: checker.Latency{P50: 1.5, P99: 7}, ThroughputCSPerS: 40, LongestStallMs: 12}
	if v == checker.Unsafe {
		r.ViolationClass = classp(class)
		r.ExclusionViolations, r.LostUpdates = 3, 2
		r.TTDMs = f64p(1234)
		if class == checker.ServiceClass {
			r.ServiceViolations = 1
		}
	}
	if v == checker.Stuck {
		r.LongestStallMs = 9000
	}
	r.FaultsPlanned = plannedBy(scen)
	return r
}

// plannedBy is what a run of scenario scen plans, as its result.json says (faults_planned): the
// property table decides from what the faults do, not from the scenario's name.
func plannedBy(scen string) []checker.PlannedFault {
	p := checker.PlannedFault{Rule: 1, Kind: scen, Fired: true, Times: 1}
	switch scen {
	case "baseline":
		return []checker.PlannedFault{}
	case "client-crash":
		p.ActsOn, p.Lasting = history.ActsOnProcess, true
	case "node-kill":
		p.Kind, p.ActsOn, p.Lasting = "kill", history.ActsOnServers, true
	case "failover":
		p.ActsOn = history.ActsOnServers
	case "client-pause":
		p.ActsOn = history.ActsOnProcess
	default:
		p.ActsOn = history.ActsOnNetwork
	}
	return []checker.PlannedFault{p}
}

func sampleCells() []Cell {
	return []Cell{
		{Scenario: "baseline", Algorithm: "setnx", Dir: "baseline/setnx", Result: res("setnx", "baseline", checker.Safe, ""), Expected: "S"},
		{Scenario: "baseline", Algorithm: "token", Dir: "baseline/token", Result: res("token", "baseline", checker.Safe, ""), Expected: "safe"},
		{Scenario: "client-crash", Algorithm: "setnx", Dir: "client-crash/setnx", Result: res("setnx", "client-crash", checker.Stuck, ""), Expected: "X"},
		{Scenario: "client-crash", Algorithm: "token", Dir: "client-crash/token", Result: res("token", "client-crash", checker.Safe, ""), Expected: "S"},
		{Scenario: "client-pause", Algorithm: "setnx", Dir: "client-pause/setnx", Result: res("setnx", "client-pause", checker.Safe, ""), Expected: "S"},
		// Expected client class, observed service class: a mismatch.
		{Scenario: "client-pause", Algorithm: "token", Dir: "client-pause/token", Result: res("token", "client-pause", checker.Unsafe, checker.ServiceClass), Expected: "Uc"},
		{Scenario: "failover", Algorithm: "setnx", Dir: "failover/setnx", Result: res("setnx", "failover", checker.Unsafe, checker.ServiceClass), Expected: "unsafe-service"},
		{Scenario: "getset-race", Algorithm: "token", NA: "getset-race applies to getset only"},
		{Scenario: "node-kill", Algorithm: "token", Dir: "node-kill/token", Result: res("token", "node-kill", checker.Unknown, ""), Expected: "X"},
	}
}

func TestWriteMatrix(t *testing.T) {
	dir := t.TempDir()
	cells := sampleCells()
	if err := WriteMatrix(dir, cells, MatrixMeta{Title: "test matrix", Command: "lockchaos matrix --seed 1", Seed: 1,
		Algorithms: []string{"setnx", "token"}}); err != nil {
		t.Fatal(err)
	}
	var doc resultsFile
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, ResultsFile))), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Summary
	if s.Cells != 9 || s.Matched != 6 || s.Mismatched != 2 || s.NA != 1 {
		t.Errorf("summary = %+v, want 9 cells, 6 matched, 2 mismatched, 1 n/a", s)
	}
	if s.ByVerdict["safe"] != 4 || s.ByVerdict["unsafe-service"] != 2 || s.ByVerdict["stuck"] != 1 || s.ByVerdict["n/a"] != 1 || s.ByVerdict["unknown"] != 1 {
		t.Errorf("by verdict = %v", s.ByVerdict)
	}
	if len(doc.Results) != 9 || doc.Results[5].Matches == nil || *doc.Results[5].Matches || doc.Results[5].Result == nil {
		t.Errorf("results[5] = %+v", doc.Results[5])
	}

	page := readFile(t, filepath.Join(dir, IndexFile))
	// 6 scenarios × 2 algorithms: every square has a data-cell, filled or not.
	if n := strings.Count(page, "data-cell="); n != 12 {
		t.Errorf("%d data-cell attributes, want 12", n)
	}
	for _, want := range []string{
		`data-cell="client-pause/token" data-verdict="unsafe-service" data-mismatch="true"`,
		`href="client-pause/token/report.html"`, "≠ expected Uc", "getset-race applies to getset only",
		"TTD 1.23 s", "no — stuck after the holder crashed", "yes (client-crash)",
		"violated under client-pause (service)", "no — 2 lost updates", "1.5 ms / 7 ms (baseline)",
		"lockchaos matrix --seed 1",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}

	var ju junitSuites
	if err := xml.Unmarshal([]byte(readFile(t, filepath.Join(dir, JUnitFile))), &ju); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	suite := ju.Suites[0]
	if suite.Tests != 9 || suite.Failures != 2 || suite.Skipped != 1 || suite.Errors != 0 {
		t.Errorf("junit suite: %d tests, %d failures, %d skipped, %d errors", suite.Tests, suite.Failures, suite.Skipped, suite.Errors)
	}
	c := suite.Cases[5]
	if c.Classname != "client-pause" || c.Name != "token" || c.Failure == nil || c.Failure.Message != "expected Uc, observed unsafe-service" {
		t.Errorf("junit case 5 = %+v", c)
	}
	if sk := suite.Cases[7].Skipped; sk == nil || sk.Message != "getset-race applies to getset only" {
		t.Errorf("n/a cell not skipped with its reason: %+v", suite.Cases[7])
	}
}

func TestMatrixRunsAndErrors(t *testing.T) {
	dir := t.TempDir()
	cells := []Cell{
		{Scenario: "latency", Algorithm: "redlock", Run: 1, Dir: "latency/redlock/1", Result: res("redlock", "latency", checker.Safe, ""), Expected: "S"},
		{Scenario: "latency", Algorithm: "redlock", Run: 2, Dir: "latency/redlock/2", Result: res("redlock", "latency", checker.Unsafe, checker.ClientClass), Expected: "S"},
		{Scenario: "latency", Algorithm: "zookeeper", Err: "zookeeper did not start: no java"},
		{Scenario: "baseline", Algorithm: "zookeeper", Result: res("zookeeper", "baseline", checker.Unsafe, checker.ClientClass)},
	}
	if err := WriteMatrix(dir, cells, MatrixMeta{}); err != nil {
		t.Fatal(err)
	}
	var ju junitSuites
	if err := xml.Unmarshal([]byte(readFile(t, filepath.Join(dir, JUnitFile))), &ju); err != nil {
		t.Fatal(err)
	}
	s := ju.Suites[0]
	if s.Cases[0].Name != "redlock#1" || s.Cases[1].Name != "redlock#2" || s.Cases[1].Failure == nil || s.Cases[0].Failure != nil {
		t.Errorf("runs: %+v", s.Cases[:2])
	}
	if s.Cases[2].Error == nil || s.Errors != 1 {
		t.Errorf("harness error not reported as error: %+v", s.Cases[2])
	}
	if s.Cases[3].Failure == nil || !strings.Contains(s.Cases[3].Failure.Message, "no expectation") {
		t.Errorf("unsafe without expectation passed: %+v", s.Cases[3])
	}
	page := readFile(t, filepath.Join(dir, IndexFile))
	// The cell with two runs shows the worse one and links both reports.
	if !strings.Contains(page, `data-cell="latency/redlock" data-verdict="unsafe-client" data-mismatch="true"`) ||
		!strings.Contains(page, `href="latency/redlock/1/report.html"`) || !strings.Contains(page, `href="latency/redlock/2/report.html"`) {
		t.Errorf("multi-run cell wrong")
	}
	if !strings.Contains(page, "1/2 as expected") {
		t.Errorf("the cell of two runs, one as expected, does not say 1/2")
	}
	// The selftest's page says how often each cell ran, and that one miss fails it.
	if err := WriteMatrix(dir, cells, MatrixMeta{Page: "selftest.html", Plan: &Plan{Runs: 2}}); err != nil {
		t.Fatal(err)
	}
	if page := readFile(t, filepath.Join(dir, "selftest.html")); !strings.Contains(page, "ran each cell 2 times, without retries") ||
		!strings.Contains(page, "a single miss fails it") {
		t.Errorf("selftest.html does not say what a pass means")
	}
}

// Every spelling an expectation may come in is judged by checker.Matches, the one judge.
func TestExpectationSpellings(t *testing.T) {
	svc := res("token", "s", checker.Unsafe, checker.ServiceClass)
	cli := res("token", "s", checker.Unsafe, checker.ClientClass)
	lost := res("token", "s", checker.Unsafe, checker.ClientClass) // 2 lost updates
	kept := res("token", "s", checker.Unsafe, checker.ClientClass)
	kept.LostUpdates = 0
	for _, c := range []struct {
		exp   string
		r     *checker.Result
		match bool
	}{
		{"S", res("token", "s", checker.Safe, ""), true}, {"Us", svc, true}, {"Uc", svc, false},
		{"unsafe", cli, true}, {"unsafe:client", cli, true}, {"X", res("token", "s", checker.Stuck, ""), true},
		{"stuck", res("token", "s", checker.Safe, ""), false}, {"Unsafe (client)", cli, true},
		{"Ul", lost, true}, {"unsafe-lost", kept, false}, {"unknown", res("token", "s", checker.Unknown, ""), true},
		{"Us", nil, false},
	} {
		if got, ok := matchOf(c.exp, c.r); !ok || got != c.match || got != checker.Matches(c.r, c.exp) {
			t.Errorf("matchOf(%q) = %v, %v; want %v, as checker.Matches", c.exp, got, ok, c.match)
		}
	}
	for _, exp := range []string{"", "-", "n/a"} {
		if _, ok := matchOf(exp, res("token", "s", checker.Safe, "")); ok {
			t.Errorf("expectation %q judged", exp)
		}
	}
}

// A cell with a harness error is never matched, even when its result says it matched: the summary,
// results.json, junit.xml and Judge (the matrix's, merge's and the selftest's count) agree.
func TestErrorCellNeverMatched(t *testing.T) {
	r := res("client-cmd", "baseline", checker.Unsafe, checker.ServiceClass)
	exp, yes := "unsafe", true
	r.Expected, r.Matches = &exp, &yes
	cells := []Cell{
		{Scenario: "baseline", Algorithm: "client-cmd", Dir: "baseline/client-cmd", Result: r, Expected: "unsafe",
			Err: "client-cmd client 1 answered id 42, which it was not asked"},
		{Scenario: "baseline", Algorithm: "token", Dir: "baseline/token", Result: res("token", "baseline", checker.Safe, ""), Expected: "safe"},
	}
	if judged, match := Judge(&cells[0]); !judged || match {
		t.Errorf("Judge(error cell) = %v, %v; want judged, not matched", judged, match)
	}
	dir := t.TempDir()
	if err := WriteMatrix(dir, cells, MatrixMeta{}); err != nil {
		t.Fatal(err)
	}
	var doc resultsFile
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, ResultsFile))), &doc); err != nil {
		t.Fatal(err)
	}
	if s, want := doc.Summary, Summarize(cells); s.Matched != 1 || s.Mismatched != 1 || !reflect.DeepEqual(s, want) {
		t.Errorf("summary %+v; want 1 matched, 1 mismatched, as Summarize", s)
	}
	if m := doc.Results[0].Matches; m == nil || *m {
		t.Errorf("results.json: the error cell's matches_expectation = %v, want false", m)
	}
	var ju junitSuites
	if err := xml.Unmarshal([]byte(readFile(t, filepath.Join(dir, JUnitFile))), &ju); err != nil {
		t.Fatal(err)
	}
	if s := ju.Suites[0]; s.Errors != 1 || s.Failures != 0 || s.Cases[0].Error == nil {
		t.Errorf("junit: %d errors, %d failures; want the error cell as an error", s.Errors, s.Failures)
	}
}
