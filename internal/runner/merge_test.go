package runner_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/reports"
)

var (
	mergeAlgs  = []string{"token", "setnx"}
	mergeScens = []string{"baseline", "client-pause", "getset-race"}
)

// fakeShard writes what `matrix --shard i/n` of mergeAlgs × mergeScens would write, without
// running anything: a run directory with a report.html per cell and the matrix files.
func fakeShard(t *testing.T, dir string, i, n int, edit func(*reports.Plan)) {
	t.Helper()
	plan := reports.Plan{Algorithms: mergeAlgs, Scenarios: mergeScens, Runs: 1, Shard: i, Shards: n,
		Catalogue: "c0ffee", Version: "v1"}
	if edit != nil {
		edit(&plan)
	}
	var cells []reports.Cell
	for _, s := range mergeScens {
		for _, a := range mergeAlgs {
			if !(runner.Shard{I: i, N: n}).Has(s, a) {
				continue
			}
			c := reports.Cell{Scenario: s, Algorithm: a, Dir: s + "/" + a}
			if s == "getset-race" {
				c.NA, c.Dir = "the race is GETSET's own", ""
				cells = append(cells, c)
				continue
			}
			exp, match := "safe", s == "baseline" || a == "setnx"
			c.Result = &checker.Result{Algorithm: a, Scenario: s, Verdict: checker.Safe, Expected: &exp, Matches: &match}
			if !match {
				cl := checker.ClientClass
				c.Result.Verdict, c.Result.ViolationClass = checker.Unsafe, &cl
			}
			if err := os.MkdirAll(filepath.Join(dir, c.Dir), 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, c.Dir, reports.ReportFile), []byte("<html>"), 0o644)
			cells = append(cells, c)
		}
	}
	meta := reports.MatrixMeta{Title: "lockchaos matrix", Version: plan.Version, Seed: 7, Plan: &plan}
	if err := reports.WriteMatrix(dir, cells, meta); err != nil {
		t.Fatal(err)
	}
}

type mergedDoc struct {
	Plan    *reports.Plan `json:"plan"`
	Results []struct {
		Scenario  string `json:"scenario"`
		Algorithm string `json:"algorithm"`
		Dir       string `json:"dir"`
		Verdict   string `json:"verdict"`
	} `json:"results"`
}

// TestMerge: three shards of a 2 × 3 matrix merge into one matrix of every cell, in plan order,
// each linked to its run's report relative to the merged output; a mismatched cell is counted.
func TestMerge(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for i := 1; i <= 3; i++ {
		d := filepath.Join(root, "shards", "s"+string(rune('0'+i)))
		fakeShard(t, d, i, 3, nil)
		dirs = append(dirs, d)
	}
	out := filepath.Join(root, "merged")
	m, err := runner.Merge(out, dirs, "lockchaos merge ...")
	if err != nil {
		t.Fatal(err)
	}
	if m.Ran != 4 || len(m.Cells) != 6 || m.Mismatched != 1 {
		t.Errorf("merged %d runs of %d cells, %d mismatched; want 4 of 6, 1 (token × client-pause)", m.Ran, len(m.Cells), m.Mismatched)
	}
	b, err := os.ReadFile(filepath.Join(out, reports.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc mergedDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range doc.Results {
		order = append(order, r.Scenario+"/"+r.Algorithm)
		if r.Dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(r.Dir), reports.ReportFile)); err != nil {
			t.Errorf("%s/%s links to %s, which is not its report relative to the merged output: %v", r.Scenario, r.Algorithm, r.Dir, err)
		}
		if !strings.HasPrefix(r.Dir, "../shards/s") {
			t.Errorf("link %s", r.Dir)
		}
	}
	want := "baseline/token baseline/setnx client-pause/token client-pause/setnx getset-race/token getset-race/setnx"
	if strings.Join(order, " ") != want {
		t.Errorf("cells %v, want %s", order, want)
	}
	if doc.Plan == nil || doc.Plan.Shards != 1 || doc.Plan.Shard != 1 || doc.Plan.Version != "v1" {
		t.Errorf("merged plan %+v, want the shards' plan as one whole (1/1)", doc.Plan)
	}
	for _, f := range []string{reports.IndexFile, reports.JUnitFile} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || !strings.Contains(string(b), "client-pause") {
			t.Errorf("%s: %v", f, err)
		}
	}
	junit, _ := os.ReadFile(filepath.Join(out, reports.JUnitFile))
	if n := strings.Count(string(junit), "<testcase "); n != 6 {
		t.Errorf("junit.xml has %d testcases, want 6", n)
	}
}

// TestMergeBadInput: each way shards fail to make one matrix is one line naming the problem and
// the fix, and nothing is written.
func TestMergeBadInput(t *testing.T) {
	root := t.TempDir()
	shard := func(name string, i, n int, edit func(*reports.Plan)) string {
		d := filepath.Join(root, name)
		fakeShard(t, d, i, n, edit)
		return d
	}
	s1, s2, s3 := shard("s1", 1, 3, nil), shard("s2", 2, 3, nil), shard("s3", 3, 3, nil)
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)
	noPlan := filepath.Join(root, "noplan")
	reports.WriteMatrix(noPlan, nil, reports.MatrixMeta{Version: "v1"})
	corrupt := filepath.Join(root, "corrupt")
	os.MkdirAll(corrupt, 0o755)
	os.WriteFile(filepath.Join(corrupt, reports.ResultsFile), []byte("{not json"), 0o644)
	for _, tc := range []struct {
		name string
		dirs []string
		want []string
	}{
		{"missing shard", []string{s1, s3}, []string{"cells of the plan are in no shard", "add the output of shard 2/3"}},
		{"no results.json", []string{s1, s2, empty}, []string{"empty has no results.json", "--out directory of each shard"}},
		{"corrupt results.json", []string{corrupt}, []string{"corrupt/results.json"}},
		{"no plan", []string{noPlan}, []string{"records no plan", "run that shard again"}},
		{"same shard twice", []string{s1, s2, s3, s2}, []string{"both ran shard 2/3", "once"}},
		{"other version", []string{s1, s2, shard("v2", 3, 3, func(p *reports.Plan) { p.Version = "v2" })}, []string{"different plans (version v1 vs v2)", "same lockchaos"}},
		{"other catalogue", []string{s1, s2, shard("cat", 3, 3, func(p *reports.Plan) { p.Catalogue = "beef" })}, []string{"catalogue c0ffee vs beef"}},
		{"other shard count", []string{s1, shard("of4", 2, 4, nil)}, []string{"3 vs 4 shards"}},
		{"other algorithms", []string{s1, s2, shard("algs", 3, 3, func(p *reports.Plan) { p.Algorithms = []string{"token"} })}, []string{"algorithms token,setnx vs token"}},
		{"nothing", nil, []string{"lockchaos merge OUT DIR"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(root, "out-"+strings.ReplaceAll(tc.name, " ", "-"))
			_, err := runner.Merge(out, tc.dirs, "")
			if err == nil {
				t.Fatal("merged")
			}
			if !runner.BadInput(err) {
				t.Errorf("err %v is not bad input (exit 254)", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("err is not one line: %q", err)
			}
			if _, serr := os.Stat(out); !os.IsNotExist(serr) {
				t.Errorf("the failed merge wrote %s", out)
			}
		})
	}
}

// TestMergeErrorCellMismatched: a cell whose run hit a harness error is mismatched in merge's
// count (its exit code) as in the merged summary and junit.xml, even when its result matched.
func TestMergeErrorCellMismatched(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s1")
	fakeShard(t, dir, 1, 1, nil)
	cells, meta, err := reports.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cells {
		if c := &cells[i]; c.Scenario == "baseline" && c.Algorithm == "token" {
			if m := c.Result.Matches; m == nil || !*m {
				t.Fatalf("the fixture's baseline × token does not match: %v", m)
			}
			c.Err = "client-cmd client 1 answered id 42, which it was not asked"
		}
	}
	if err := reports.WriteMatrix(dir, cells, meta); err != nil {
		t.Fatal(err)
	}
	m, err := runner.Merge(filepath.Join(t.TempDir(), "merged"), []string{dir}, "lockchaos merge")
	if err != nil {
		t.Fatal(err)
	}
	// token × client-pause (unsafe, expected safe) and the error cell.
	if m.Mismatched != 2 || m.Summary.Mismatched != 2 || m.Summary.Matched != 2 {
		t.Errorf("merged: %d mismatched, summary %+v; want 2 mismatched (the error cell among them), 2 matched", m.Mismatched, m.Summary)
	}
}
