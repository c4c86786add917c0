package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/internal/lcerr"
	"github.com/lockchaos/lockchaos/reports"
)

// ErrBadShards is a set of shard directories that cannot be merged into one matrix.
var ErrBadShards = lcerr.New("cannot merge")

// Merged is what Merge wrote.
type Merged struct {
	Cells      []reports.Cell
	Ran        int
	Mismatched int // as the merged results.json's summary counts them
	Plan       reports.Plan
	Summary    reports.Summary
}

// Merge puts the matrices that shards of one plan wrote into dirs back together: it reads each
// dir's results.json, checks that they are shards of the same plan (same algorithms, scenarios,
// runs, shard count, catalogue and version), that no two ran the same shard or cell and that
// together they hold every cell of the plan, and then writes out/index.html, results.json and
// junit.xml with every cell's link re-pointed at its run directory relative to out. Nothing is
// written unless every check passes; each file is written atomically (a temporary file renamed).
func Merge(out string, dirs []string, command string) (*Merged, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%w: give the shards' output directories (lockchaos merge OUT DIR...)", ErrBadShards)
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	var (
		plan      *reports.Plan
		planDir   string
		seenShard = map[int]string{}
		seenCell  = map[string]string{}
		cells     []reports.Cell
		meta      reports.MatrixMeta
	)
	for _, dir := range dirs {
		cs, m, err := reports.ReadResults(dir)
		if errors.Is(err, reports.ErrNoResults) {
			return nil, fmt.Errorf("%w: %s has no %s: give the --out directory of each shard, after its matrix finished", ErrBadShards, dir, reports.ResultsFile)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v (a shard's results.json is written by lockchaos matrix: run the shard again)", ErrBadShards, err)
		}
		p := m.Plan
		if p == nil {
			return nil, fmt.Errorf("%w: %s/%s records no plan: it was written by an older lockchaos; run that shard again with this one", ErrBadShards, dir, reports.ResultsFile)
		}
		if plan == nil {
			plan, planDir, meta = p, dir, m
		} else if diff := planDiff(plan, p); diff != "" {
			return nil, fmt.Errorf("%w: %s and %s ran different plans (%s): run every shard with the same lockchaos, flags and scenario file", ErrBadShards, planDir, dir, diff)
		}
		if prev, ok := seenShard[p.Shard]; ok {
			return nil, fmt.Errorf("%w: %s and %s both ran shard %d/%d: give each shard's directory once", ErrBadShards, prev, dir, p.Shard, p.Shards)
		}
		seenShard[p.Shard] = dir
		absDir, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			key := cellKey(c.Scenario, c.Algorithm, c.Run)
			if prev, ok := seenCell[key]; ok {
				return nil, fmt.Errorf("%w: cell %s is in both %s and %s: the shards overlap; give each shard's directory once", ErrBadShards, key, prev, dir)
			}
			seenCell[key] = dir
			if c.Dir != "" {
				rel, err := filepath.Rel(absOut, filepath.Join(absDir, filepath.FromSlash(c.Dir)))
				if err != nil {
					return nil, fmt.Errorf("%w: %v", ErrBadShards, err)
				}
				c.Dir = filepath.ToSlash(rel)
			}
			cells = append(cells, c)
		}
		if m.Seed != meta.Seed {
			meta.Seed = 0 // shards ran with different seeds: no one seed re-runs the matrix
		}
	}
	var missing []string
	for _, s := range plan.Scenarios {
		for _, a := range plan.Algorithms {
			for r := range max(plan.Runs, 1) {
				run := r + 1
				if plan.Runs <= 1 {
					run = 0
				}
				if _, ok := seenCell[cellKey(s, a, run)]; !ok {
					missing = append(missing, cellKey(s, a, run))
				}
			}
		}
	}
	if len(missing) > 0 {
		var absent []string
		for i := 1; i <= plan.Shards; i++ {
			if _, ok := seenShard[i]; !ok {
				absent = append(absent, fmt.Sprintf("%d/%d", i, plan.Shards))
			}
		}
		fix := "run the matrix again for them"
		if len(absent) > 0 {
			fix = "add the output of shard " + strings.Join(absent, ", ")
		}
		return nil, fmt.Errorf("%w: %d cells of the plan are in no shard: %s; %s", ErrBadShards, len(missing), strings.Join(missing, ", "), fix)
	}
	// Runs in plan order, then the n/a cells, as a single matrix lists them.
	order := map[string]int{}
	for i, s := range plan.Scenarios {
		for j, a := range plan.Algorithms {
			order[s+"/"+a] = i*len(plan.Algorithms) + j
		}
	}
	slices.SortStableFunc(cells, func(x, y reports.Cell) int {
		if (x.NA == "") != (y.NA == "") {
			if x.NA == "" {
				return -1
			}
			return 1
		}
		if d := order[x.Scenario+"/"+x.Algorithm] - order[y.Scenario+"/"+y.Algorithm]; d != 0 {
			return d
		}
		return x.Run - y.Run
	})
	whole := *plan
	whole.Shard, whole.Shards = 1, 1
	meta.Plan = &whole
	meta.Title = fmt.Sprintf("lockchaos matrix (merged from %d shards)", len(dirs))
	meta.Command = command
	res := &Merged{Cells: cells, Plan: whole, Summary: reports.Summarize(cells)}
	res.Ran, res.Mismatched = res.Summary.Cells-res.Summary.NA, res.Summary.Mismatched
	if err := writeAll(out, cells, meta); err != nil {
		return nil, fmt.Errorf("write merged matrix: %w", err)
	}
	return res, nil
}

// writeAll writes the matrix files into a temporary directory inside out and only then renames
// them into out, so a failure leaves out as it was.
func writeAll(out string, cells []reports.Cell, meta reports.MatrixMeta) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(out, ".merge-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := reports.WriteMatrix(tmp, cells, meta); err != nil {
		return err
	}
	for _, f := range []string{reports.ResultsFile, reports.JUnitFile, reports.IndexFile} {
		if err := os.Rename(filepath.Join(tmp, f), filepath.Join(out, f)); err != nil {
			return err
		}
	}
	return nil
}

func cellKey(scenario, algorithm string, run int) string {
	k := scenario + "/" + algorithm
	if run > 0 {
		k += fmt.Sprintf("#%d", run)
	}
	return k
}

// planDiff names the first way two shards' plans differ, ignoring which shard each is.
func planDiff(a, b *reports.Plan) string {
	switch {
	case a.Version != b.Version:
		return fmt.Sprintf("version %s vs %s", a.Version, b.Version)
	case a.Shards != b.Shards:
		return fmt.Sprintf("%d vs %d shards", a.Shards, b.Shards)
	case !slices.Equal(a.Algorithms, b.Algorithms):
		return fmt.Sprintf("algorithms %s vs %s", strings.Join(a.Algorithms, ","), strings.Join(b.Algorithms, ","))
	case !slices.Equal(a.Scenarios, b.Scenarios):
		return fmt.Sprintf("scenarios %s vs %s", strings.Join(a.Scenarios, ","), strings.Join(b.Scenarios, ","))
	case a.Runs != b.Runs:
		return fmt.Sprintf("%d vs %d runs per cell", a.Runs, b.Runs)
	case a.Catalogue != b.Catalogue:
		return fmt.Sprintf("catalogue %s vs %s: a scenario's definition or expectation differs", a.Catalogue, b.Catalogue)
	}
	return ""
}
