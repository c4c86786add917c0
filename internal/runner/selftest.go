package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

// SelftestPage is the selftest's matrix-like page in its output directory.
const SelftestPage = "selftest.html"

// SelftestCells plans `lockchaos selftest` (docs/design.md#mutants): every scenario × the mutants it must
// catch, and × its real algorithms — the seed algorithms and the real algorithms the mutants
// break (token+watchdog, token+fence). A mutant cell expects its catch (Us, Uc or X); a real cell
// its catalogue expectation. Cells without an expectation are left out; n/a cells are kept (they
// show on the page).
func SelftestCells(ss []scenarios.Scenario) (cells []scenarios.Cell, algs []string, err error) {
	algs = slices.Clone(scenarios.Seed)
	var mutants []string
	for _, m := range algorithms.Mutants() {
		if !slices.Contains(algs, m.Mutant) {
			algs = append(algs, m.Mutant)
		}
	}
	for _, s := range ss {
		for name := range s.Catches {
			if !slices.Contains(mutants, name) {
				mutants = append(mutants, name)
			}
		}
	}
	slices.Sort(mutants)
	for _, s := range ss {
		for _, a := range algs {
			c, err := s.Cell(a)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: %v", ErrBadMatrix, err)
			}
			if c.Expected != "" || c.NA != "" {
				cells = append(cells, c)
			}
		}
		for _, m := range mutants {
			if _, ok := s.Catches[m]; !ok {
				continue
			}
			c, err := s.Cell(m)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: %v", ErrBadMatrix, err)
			}
			cells = append(cells, c)
		}
	}
	return cells, append(algs, mutants...), nil
}

// SelftestResult is what a selftest came to.
type SelftestResult struct {
	*MatrixResult
	// Tally is every cell that ran, in plan order, with how many of its runs matched.
	Tally []SelftestCell
	// Missed names each cell that missed in any of its runs — a mutant not caught, a real cell
	// not as expected (or without evidence), a run that hit a harness error — with its n/N and
	// what each missed run gave.
	Missed []string
	// Uncaught lists the scenarios that name no mutant: they test nothing (docs/design.md#mutants).
	Uncaught []string
	// Errors counts the runs that hit a harness error (each is also a miss of its cell).
	Errors int
}

// SelftestCell is one cell of the selftest over its runs.
type SelftestCell struct {
	Scenario, Algorithm, Expected string
	// Mutant is true for a mutant's cell: a match is a catch.
	Mutant bool
	// Matched of Runs runs met the expectation; Misses says what each of the others gave.
	Matched, Runs int
	Misses        []string
}

// Passed reports whether every mutant was caught and every real cell was as expected, in every
// run.
func (r *SelftestResult) Passed() bool { return len(r.Missed) == 0 && len(r.Uncaught) == 0 }

// String is the cell's line: "token-plain-del × slow-release: caught 5/5", with what each missed
// run gave.
func (c SelftestCell) String() string {
	what := "as expected"
	if c.Mutant {
		what = "caught"
	}
	line := fmt.Sprintf("%s × %s: %s %d/%d", c.Algorithm, c.Scenario, what, c.Matched, c.Runs)
	if len(c.Misses) > 0 {
		line += " — " + strings.Join(c.Misses, "; ")
	}
	return line
}

// Selftest runs every scenario of ss against its mutants and its real algorithms (SelftestCells),
// each cell m.Runs times (default 1) with m's Parallel. There is no retry: a cell passes only when
// every one of its runs matched (a mutant caught n/N times with n < N fails it, named with its
// misses), as docs/design.md#evidence asks a cell to be deterministic. The page (selftest.html),
// results.json and junit.xml are written into o.Out.
func Selftest(ctx context.Context, ss []scenarios.Scenario, m Matrix, o Options, command string) (*SelftestResult, error) {
	cells, algs, err := SelftestCells(ss)
	if err != nil {
		return nil, err
	}
	m.Cells, m.Algorithms, m.Scenarios = cells, algs, ss
	res, err := RunMatrix(ctx, m, o)
	if err != nil && res == nil {
		return nil, err
	}
	st := &SelftestResult{MatrixResult: res}
	for _, s := range ss {
		if len(s.Catches) == 0 {
			st.Uncaught = append(st.Uncaught, s.Name)
		}
	}
	index := map[[2]string]int{}
	for _, c := range res.Cells {
		if c.NA != "" {
			continue
		}
		k := [2]string{c.Scenario, c.Algorithm}
		i, ok := index[k]
		if !ok {
			i = len(st.Tally)
			index[k] = i
			sc := SelftestCell{Scenario: c.Scenario, Algorithm: c.Algorithm, Expected: c.Expected}
			for _, s := range ss {
				if s.Name == c.Scenario {
					_, sc.Mutant = s.Catches[c.Algorithm]
				}
			}
			st.Tally = append(st.Tally, sc)
		}
		t := &st.Tally[i]
		t.Runs++
		if c.Err != "" {
			st.Errors++
		}
		_, match := reports.Judge(&c)
		miss := describeMiss(c)
		if match {
			// One judge (docs/design.md#evidence): the directory re-checked from its history alone, as
			// `lockchaos check DIR` does, must give the verdict the run gave.
			if again := recheck(o.out(), c); again == "" {
				t.Matched++
				continue
			} else {
				miss = again
			}
		}
		if c.Run > 0 {
			miss = fmt.Sprintf("run %d: %s", c.Run, miss)
		}
		t.Misses = append(t.Misses, miss)
	}
	for _, t := range st.Tally {
		if t.Matched < t.Runs {
			st.Missed = append(st.Missed, t.String())
		}
	}
	meta := res.Meta(command, o.Backend, o.Seed)
	meta.Title, meta.Page = "lockchaos selftest", SelftestPage
	if werr := reports.WriteMatrix(o.out(), res.Cells, meta); werr != nil {
		return st, werr
	}
	return st, err
}

// recheck checks a cell's run directory again from its history alone and says how its verdict
// differs from the run's, or "" when it is the same (verdict and violation class).
func recheck(out string, c reports.Cell) string {
	if c.Result == nil || c.Dir == "" {
		return ""
	}
	o, err := CheckHistory(filepath.Join(out, filepath.FromSlash(c.Dir)), 0)
	if err != nil {
		return "check DIR failed: " + err.Error()
	}
	got, want := o.Result, c.Result
	if got.Verdict != want.Verdict || classOf(got.ViolationClass) != classOf(want.ViolationClass) {
		return fmt.Sprintf("check DIR gave %s %s where the run gave %s %s", got.Verdict, classOf(got.ViolationClass),
			want.Verdict, classOf(want.ViolationClass))
	}
	return ""
}

func classOf(c *checker.Class) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf("(%s class)", *c)
}

// describeMiss says what a run that missed its expectation gave.
func describeMiss(c reports.Cell) string {
	switch {
	case c.Err != "":
		return "error: " + c.Err
	case c.Result == nil:
		return "no result"
	case c.Result.DecidedBy != "":
		return fmt.Sprintf("%s (%s), expected %s", c.Result.Verdict, c.Result.DecidedBy, c.Expected)
	}
	return fmt.Sprintf("%s, expected %s", c.Result.Verdict, c.Expected)
}
