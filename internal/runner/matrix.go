package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lockchaos/lockchaos/internal/lcerr"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

// Shard names the part of a matrix one process runs: shard I of N, from 1. The zero Shard is
// the whole matrix.
type Shard struct{ I, N int }

// ParseShard parses "i/n" (1 ≤ i ≤ n); "" is the whole matrix.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{1, 1}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("%w: --shard %q: want i/n with 1 ≤ i ≤ n, e.g. --shard 2/4", ErrBadMatrix, s)
	}
	return Shard{i, n}, nil
}

func (s Shard) whole() Shard {
	if s.N == 0 {
		return Shard{1, 1}
	}
	return s
}

// Has reports whether the cell scenario × algorithm belongs to the shard. Cells are assigned by
// a stable hash (FNV-1a) of "scenario/algorithm", so adding a cell to the matrix moves no other
// cell to another shard, and every run of a cell lands in the same shard.
func (s Shard) Has(scenario, algorithm string) bool {
	s = s.whole()
	h := fnv.New32a()
	h.Write([]byte(scenario + "/" + algorithm))
	return int(h.Sum32()%uint32(s.N)) == s.I-1
}

// ErrBadMatrix is a matrix the user asked for that cannot be run (bad shard, unknown cell).
var ErrBadMatrix = lcerr.New("bad matrix")

// Matrix is a plan of cells to run, and how.
type Matrix struct {
	// Algorithms × Scenarios are the cells, in the scenarios' order, then the algorithms'.
	Algorithms []string
	Scenarios  []scenarios.Scenario
	// Topology, when set, runs every algorithm on it instead of its default (scenarios.CellOn).
	Topology string
	// Keep, when set, picks the cells to plan among them (reproduce keeps those with an
	// expectation); the others are not part of the matrix at all.
	Keep func(scenarios.Cell) bool
	// Cells, when set, are the cells to plan instead of Algorithms × Scenarios (locktest plans a
	// user's lock with a reference algorithm's variants).
	Cells []scenarios.Cell
	// Timeout, when set, bounds each run.
	Timeout time.Duration
	// Runs per cell (default 1). With Runs > 1 each run has its own directory and seed+run-1.
	Runs     int
	Shard    Shard
	Parallel int // cells run at once (default 1)
	// Around, when set, wraps each planned cell and run, n/a cells included, in plan order when
	// Parallel is 1: it calls do once, or the run is recorded as not run. locktest runs each
	// inside a subtest.
	Around func(c scenarios.Cell, run int, do func() (reports.Cell, error))
	// Started and Done, when set, are told of each run as it starts and ends (Done under a lock,
	// in completion order), for progress output.
	Started func(c scenarios.Cell, run int)
	Done    func(rc reports.Cell, err error)
}

// MatrixResult is what a matrix came to.
type MatrixResult struct {
	// Cells are the planned cells of the shard: the runs in plan order, then the n/a cells.
	Cells      []reports.Cell
	Ran        int // runs of the plan (n/a cells excluded), whether or not they could be carried out
	NA         int
	Mismatched int // runs that did not match their expectation, or hit a harness error (Summary's)
	// Summary is reports.Summarize of the cells: the one count of matched and mismatched runs
	// (a run without an expectation is neither; one with a harness error is mismatched).
	Summary reports.Summary
	Plan    reports.Plan
	Started time.Time
	Elapsed time.Duration
}

type job struct {
	cell scenarios.Cell
	run  int
}

// plan lists the jobs of the shard.
func (m Matrix) plan() ([]job, error) {
	cells := m.Cells
	if cells == nil {
		for _, s := range m.Scenarios {
			for _, a := range m.Algorithms {
				cell, err := s.CellOn(a, m.Topology)
				if err != nil {
					return nil, fmt.Errorf("%w: %v", ErrBadMatrix, err)
				}
				cells = append(cells, cell)
			}
		}
	}
	runs := max(m.Runs, 1)
	var jobs []job
	for _, cell := range cells {
		if (m.Keep != nil && !m.Keep(cell)) || !m.Shard.Has(cell.Scenario, cell.Algorithm) {
			continue
		}
		for r := 1; r <= runs; r++ {
			run := r
			if runs == 1 {
				run = 0
			}
			jobs = append(jobs, job{cell, run})
		}
	}
	return jobs, nil
}

// Planned counts the runs and the n/a cells of the matrix's shard.
func (m Matrix) Planned() (runs, na int, err error) {
	jobs, err := m.plan()
	for _, j := range jobs {
		if j.cell.NA == "" {
			runs++
		} else {
			na++
		}
	}
	return runs, na, err
}

// RunMatrix runs the cells of the matrix (of its shard) with at most Parallel at once, and counts
// the runs that differ from their expectation. The error is the first harness error (a cell that
// could not be run), after every cell has been tried; a bad-input error (a missing server binary,
// a bad configuration), which would fail every cell alike, is returned in preference. What each
// lock did is in the cells.
func RunMatrix(ctx context.Context, m Matrix, o Options) (*MatrixResult, error) {
	jobs, err := m.plan()
	if err != nil {
		return nil, err
	}
	res := &MatrixResult{Started: time.Now(), Plan: m.recordedPlan(o.Version)}
	cells := make([]reports.Cell, len(jobs))
	var (
		mu       sync.Mutex
		firstErr error
		g        errgroup.Group
	)
	g.SetLimit(max(m.Parallel, 1))
	for i, j := range jobs {
		cells[i] = reports.Cell{Scenario: j.cell.Scenario, Algorithm: j.cell.Algorithm, Run: j.run,
			NA: j.cell.NA, Expected: j.cell.Expected}
		if j.cell.NA == "" {
			cells[i].Err = "not run: the matrix was interrupted first"
		}
		if ctx.Err() != nil {
			continue
		}
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil // interrupted while this job waited for a slot: not run
			}
			do := func() (reports.Cell, error) {
				if j.cell.NA == "" && m.Started != nil {
					m.Started(j.cell, j.run)
				}
				ctx := ctx
				if m.Timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, m.Timeout)
					defer cancel()
				}
				rc, _, err := RunCell(ctx, j.cell, o, j.run)
				if err != nil && rc.Err == "" {
					rc.Err = err.Error()
				}
				mu.Lock()
				defer mu.Unlock()
				cells[i] = rc
				if err != nil {
					name := j.cell.Scenario + "/" + j.cell.Algorithm
					switch {
					case BadInput(err) && !BadInput(firstErr):
						firstErr = err // the same cause fails every cell: say it once
					case firstErr == nil && ctx.Err() == nil:
						firstErr = fmt.Errorf("%s: %w", name, err)
					}
				}
				if j.cell.NA == "" && m.Done != nil {
					m.Done(rc, err)
				}
				return rc, err
			}
			if m.Around != nil {
				m.Around(j.cell, j.run, do)
			} else {
				do()
			}
			return nil
		})
	}
	g.Wait()
	res.Elapsed = time.Since(res.Started)
	// Runs first, in plan order, then the n/a cells, as the matrix page and junit.xml list them.
	for _, c := range cells {
		if c.NA == "" {
			res.Cells = append(res.Cells, c)
			res.Ran++
		}
	}
	for _, c := range cells {
		if c.NA != "" {
			res.Cells = append(res.Cells, c)
			res.NA++
		}
	}
	res.Summary = reports.Summarize(res.Cells)
	res.Mismatched = res.Summary.Mismatched
	return res, firstErr
}

// recordedPlan is the plan written into results.json for merge to check.
func (m Matrix) recordedPlan(version string) reports.Plan {
	sh := m.Shard.whole()
	p := reports.Plan{Algorithms: m.Algorithms, Runs: max(m.Runs, 1), Shard: sh.I, Shards: sh.N, Version: version}
	for _, s := range m.Scenarios {
		p.Scenarios = append(p.Scenarios, s.Name)
	}
	p.Catalogue = Fingerprint(m.Scenarios)
	return p
}

// Fingerprint is a short hash of the scenarios' definitions, expectations included.
func Fingerprint(ss []scenarios.Scenario) string {
	h := fnv.New64a()
	enc := json.NewEncoder(h)
	for _, s := range ss {
		_ = enc.Encode(s)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// Write writes index.html, results.json and junit.xml of the matrix into out. command is the
// command line that re-runs it.
func (r *MatrixResult) Write(out, command, backend string, seed int64) error {
	return reports.WriteMatrix(out, r.Cells, r.Meta(command, backend, seed))
}

// Meta describes the matrix for reports.
func (r *MatrixResult) Meta(command, backend string, seed int64) reports.MatrixMeta {
	p := r.Plan
	return reports.MatrixMeta{Title: "lockchaos matrix", Command: command, Backend: backend, Version: p.Version,
		Seed: seed, Started: r.Started, Algorithms: p.Algorithms, Scenarios: p.Scenarios, Plan: &p}
}

// BadInput reports whether err is the user's to fix (exit 254) rather than the harness's: whether
// it wraps lcerr.ErrBadInput, as every package's bad-input sentinel does (a bad configuration, a
// missing server binary or image, a bad cluster spec, a corrupt history, a bad matrix or bad
// shards to merge, a bad process-client manifest or a client that cannot run here).
func BadInput(err error) bool { return errors.Is(err, lcerr.ErrBadInput) }
