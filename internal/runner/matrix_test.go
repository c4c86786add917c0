package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestShardsPartition: every cell of the catalogue × every algorithm is in exactly one shard of n,
// the shards are not lopsided, and adding a cell (an algorithm, a scenario) moves no other cell.
func TestShardsPartition(t *testing.T) {
	algs := algorithms.Names()
	var scens []string
	for _, s := range scenarios.All() {
		scens = append(scens, s.Name)
	}
	for _, n := range []int{1, 2, 3, 4, 7} {
		counts := make([]int, n)
		for _, s := range scens {
			for _, a := range algs {
				in := 0
				for i := 1; i <= n; i++ {
					if (runner.Shard{I: i, N: n}).Has(s, a) {
						in++
						counts[i-1]++
					}
				}
				if in != 1 {
					t.Fatalf("%s/%s is in %d of %d shards", s, a, in, n)
				}
			}
		}
		total := len(algs) * len(scens)
		for i, c := range counts {
			if n > 1 && (c == 0 || c > 2*total/n) {
				t.Errorf("shard %d/%d holds %d of %d cells: the hash spreads cells badly", i+1, n, c, total)
			}
		}
	}
	// The shard of a cell depends on its name alone, so a new cell moves no other one.
	const n = 4
	before := map[string]int{}
	for _, s := range scens {
		for _, a := range algs {
			before[s+"/"+a] = shardOf(s, a, n)
		}
	}
	for _, s := range append(scens, "a-new-scenario") {
		for _, a := range append(algs, "a-new-algorithm") {
			if want, ok := before[s+"/"+a]; ok && shardOf(s, a, n) != want {
				t.Errorf("%s/%s moved from shard %d to %d", s, a, want, shardOf(s, a, n))
			}
		}
	}
	// Pinned: the assignment is a contract between the shards of one CI run and their merge.
	if got := shardOf("baseline", "token", 4); got != pinnedBaselineToken {
		t.Errorf("baseline/token is in shard %d/4, was %d: the hash changed, and old shards no longer merge with new ones", got, pinnedBaselineToken)
	}
}

// FNV-1a 32 of "baseline/token" is 0x…; mod 4 it is 0: shard 1/4.
const pinnedBaselineToken = 1

func shardOf(s, a string, n int) int {
	for i := 1; i <= n; i++ {
		if (runner.Shard{I: i, N: n}).Has(s, a) {
			return i
		}
	}
	return 0
}

func TestParseShard(t *testing.T) {
	for in, want := range map[string]runner.Shard{"": {1, 1}, "1/1": {1, 1}, "2/4": {2, 4}} {
		if got, err := runner.ParseShard(in); err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0/4", "5/4", "4", "a/b", "1/0", "-1/2"} {
		if _, err := runner.ParseShard(in); !runner.BadInput(err) {
			t.Errorf("ParseShard(%q): err %v, want bad input", in, err)
		}
	}
}

// TestShardsMergeLikeOneMatrix runs a small matrix (2 algorithms × 2 scenarios) once whole and
// once as 3 shards, each written to its own directory, merges the shards and checks the merged
// matrix has the same cells, in the same order, with the same seeds, as the whole one, and carries
// each shard's results unchanged. Verdicts are compared too, but a difference is only logged: two
// separate runs of a cell may differ (the catalogue promises ≥ 19 of 20), which says nothing about
// sharding. Real servers.
func TestShardsMergeLikeOneMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a matrix against real servers")
	}
	var scens []scenarios.Scenario
	for _, name := range []string{"baseline", "client-pause"} {
		s, err := scenarios.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		scens = append(scens, s)
	}
	m := runner.Matrix{Algorithms: []string{"token", "setnx"}, Scenarios: scens, Parallel: 2, Timeout: 2 * time.Minute}
	o := runner.Options{Seed: 3, Version: "test"}
	root := t.TempDir()
	run := func(dir string, sh runner.Shard) *runner.MatrixResult {
		t.Helper()
		m.Shard, o.Out = sh, dir
		res, err := runner.RunMatrix(context.Background(), m, o)
		if errors.Is(err, cluster.ErrMissingBinary) {
			testenv.MissingServer(t, err)
		}
		if err != nil {
			t.Fatalf("shard %v: %v", sh, err)
		}
		if err := res.Write(dir, "lockchaos matrix", "local", o.Seed); err != nil {
			t.Fatal(err)
		}
		return res
	}
	whole := run(filepath.Join(root, "whole"), runner.Shard{})
	var dirs []string
	ran, mismatched := 0, 0
	shardVerdicts := map[string]string{}
	for i := 1; i <= 3; i++ {
		d := filepath.Join(root, fmt.Sprintf("shard%d", i))
		res := run(d, runner.Shard{I: i, N: 3})
		ran += res.Ran
		mismatched += res.Mismatched
		for _, c := range res.Cells {
			shardVerdicts[c.Scenario+"/"+c.Algorithm] = verdictOf(c)
		}
		dirs = append(dirs, d)
	}
	if ran != 4 {
		t.Errorf("the 3 shards ran %d cells, want the 4 of the matrix once each", ran)
	}
	merged := filepath.Join(root, "merged")
	mres, err := runner.Merge(merged, dirs, "lockchaos merge")
	if err != nil {
		t.Fatal(err)
	}
	cellsOf := func(cells []reports.Cell) []string {
		var out []string
		for _, c := range cells {
			seed := int64(-1)
			if c.Result != nil {
				seed = c.Result.Seed
			}
			out = append(out, fmt.Sprintf("%s/%s seed %d", c.Scenario, c.Algorithm, seed))
		}
		return out
	}
	if w, g := cellsOf(whole.Cells), cellsOf(mres.Cells); !slices.Equal(w, g) {
		t.Errorf("merged shards give\n%q\none matrix gives\n%q", g, w)
	}
	for i, c := range mres.Cells {
		key := c.Scenario + "/" + c.Algorithm
		if v := verdictOf(c); v != shardVerdicts[key] {
			t.Errorf("%s: merged %s, its shard said %s", key, v, shardVerdicts[key])
		}
		if i < len(whole.Cells) && verdictOf(whole.Cells[i]) != verdictOf(c) {
			t.Logf("%s: %s in the whole matrix, %s in its shard (separate runs)", key, verdictOf(whole.Cells[i]), verdictOf(c))
		}
	}
	if mres.Mismatched != mismatched || mres.Ran != 4 {
		t.Errorf("merged: %d runs, %d mismatched; the shards: 4, %d", mres.Ran, mres.Mismatched, mismatched)
	}
	// The merged page links every run to its report in its shard's directory.
	var doc struct {
		Results []struct{ Dir string } `json:"results"`
	}
	b, _ := os.ReadFile(filepath.Join(merged, reports.ResultsFile))
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.Results {
		if _, err := os.Stat(filepath.Join(merged, r.Dir, reports.ReportFile)); err != nil {
			t.Errorf("merged link %s: %v", r.Dir, err)
		}
	}
	index, _ := os.ReadFile(filepath.Join(merged, reports.IndexFile))
	if !strings.Contains(string(index), "../shard") {
		t.Errorf("index.html does not link into the shards' directories")
	}
}

func verdictOf(c reports.Cell) string {
	if c.Result == nil {
		return "error " + c.Err
	}
	return string(c.Result.Verdict)
}

// TestRunMatrixPlan: without servers — n/a cells go through Around in plan order and are not
// counted as runs; Keep drops cells from the plan; a cancelled matrix marks its runs not run and
// counts them as mismatched; Runs > 1 numbers the runs.
func TestRunMatrixPlan(t *testing.T) {
	var scens []scenarios.Scenario
	for _, n := range []string{"getset-race", "zk-leader-kill", "baseline"} {
		s, err := scenarios.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		scens = append(scens, s)
	}
	m := runner.Matrix{Algorithms: []string{"token", "setnx"}, Scenarios: scens[:2]}
	var order []string
	m.Around = func(c scenarios.Cell, run int, do func() (reports.Cell, error)) {
		rc, err := do()
		order = append(order, fmt.Sprintf("%s/%s na=%v err=%v", c.Scenario, c.Algorithm, rc.NA != "", err))
	}
	res, err := runner.RunMatrix(context.Background(), m, runner.Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"getset-race/token na=true err=<nil>", "getset-race/setnx na=true err=<nil>",
		"zk-leader-kill/token na=true err=<nil>", "zk-leader-kill/setnx na=true err=<nil>"}
	if !slices.Equal(order, want) || res.Ran != 0 || res.NA != 4 || res.Mismatched != 0 {
		t.Errorf("Around saw %q, ran %d, n/a %d, mismatched %d; want %q, 0, 4, 0", order, res.Ran, res.NA, res.Mismatched, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m = runner.Matrix{Algorithms: []string{"token", "setnx"}, Scenarios: scens, Runs: 2,
		Keep: func(c scenarios.Cell) bool { return c.Algorithm == "token" }}
	if runs, na, _ := m.Planned(); runs != 2 || na != 4 {
		t.Errorf("planned %d runs, %d n/a; want token × baseline twice, and token's 2 n/a cells twice", runs, na)
	}
	res, _ = runner.RunMatrix(ctx, m, runner.Options{Out: t.TempDir()})
	var runsSeen []int
	for _, c := range res.Cells {
		if c.Algorithm != "token" {
			t.Errorf("Keep let %s through", c.Algorithm)
		}
		if c.NA == "" {
			runsSeen = append(runsSeen, c.Run)
			if !strings.HasPrefix(c.Err, "not run") || c.Result != nil {
				t.Errorf("a run of the cancelled matrix: err %q", c.Err)
			}
		} else if c.Err != "" {
			t.Errorf("an n/a cell has an error: %q", c.Err)
		}
	}
	if !slices.Equal(runsSeen, []int{1, 2}) || res.Mismatched != 2 {
		t.Errorf("runs %v, mismatched %d; want [1 2] and both counted", runsSeen, res.Mismatched)
	}
	if res.Plan.Runs != 2 || res.Plan.Shards != 1 || res.Plan.Catalogue != runner.Fingerprint(scens) {
		t.Errorf("plan %+v", res.Plan)
	}
}
