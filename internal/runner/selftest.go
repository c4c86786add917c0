package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

// SelftestPage is the selftest's matrix-like page in its output directory.
const SelftestPage = "selftest.html"

// SelftestCells plans `lockchaos selftest` (DESIGN.md §11): every scenario × the mutants it must
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
	// Missed lists the cells that did not match their expectation, retry included: a mutant that
	// was not caught, or a real cell that was not as expected (or had no evidence).
	Missed []string
	// Retried lists the cells that matched only on their second run, with what the first gave.
	Retried []string
	// Uncaught lists the scenarios that name no mutant: they test nothing (DESIGN.md §11).
	Uncaught []string
}

// Passed reports whether every mutant was caught and every real cell was as expected.
func (r *SelftestResult) Passed() bool { return len(r.Missed) == 0 && len(r.Uncaught) == 0 }

// Selftest runs every scenario of ss against its mutants and its real algorithms (SelftestCells)
// with m's Runs and Parallel. A cell that misses is run once more, as the catalogue promises a
// cell reproduces in ≥ 19 of 20 runs, not all: the retry is reported, a second miss fails. The
// page (selftest.html), results.json and junit.xml are written into o.Out.
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
	// Retry each miss once, in a run directory of its own (run 2).
	for i, c := range res.Cells {
		if c.NA != "" || cellMatched(c) || ctx.Err() != nil {
			continue
		}
		first := describeMiss(c)
		cell, cerr := cellOf(cells, c.Scenario, c.Algorithm)
		if cerr != nil {
			return st, cerr
		}
		rc, _, rerr := RunCell(ctx, cell, o, max(c.Run, 1)+1)
		if rerr != nil && rc.Err == "" {
			rc.Err = rerr.Error()
		}
		name := c.Algorithm + " × " + c.Scenario
		if cellMatched(rc) {
			st.Retried = append(st.Retried, fmt.Sprintf("%s: first run %s", name, first))
			res.Cells[i] = rc
			res.Mismatched--
			continue
		}
		st.Missed = append(st.Missed, fmt.Sprintf("%s: %s, then %s", name, first, describeMiss(rc)))
	}
	meta := res.Meta(command, o.Backend, o.Seed)
	meta.Title, meta.Page = "lockchaos selftest", SelftestPage
	if werr := reports.WriteMatrix(o.out(), res.Cells, meta); werr != nil {
		return st, werr
	}
	return st, err
}

func cellOf(cells []scenarios.Cell, scenario, algorithm string) (scenarios.Cell, error) {
	for _, c := range cells {
		if c.Scenario == scenario && c.Algorithm == algorithm {
			return c, nil
		}
	}
	return scenarios.Cell{}, fmt.Errorf("selftest: no cell %s × %s", algorithm, scenario)
}

// describeMiss says what a run that missed its expectation gave.
func describeMiss(c reports.Cell) string {
	switch {
	case c.Result == nil:
		return "error: " + c.Err
	case c.Result.DecidedBy != "":
		return fmt.Sprintf("%s (%s), expected %s", c.Result.Verdict, c.Result.DecidedBy, c.Expected)
	}
	return fmt.Sprintf("%s, expected %s", c.Result.Verdict, c.Expected)
}

// cellMatched is reports.Judge's match.
func cellMatched(c reports.Cell) bool {
	_, m := reports.Judge(&c)
	return m
}
