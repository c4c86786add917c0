// Package analyze runs one lock under every scenario that applies to it — the catalogue's, and
// the scenarios of scenario files that expect something of it (the reproductions of published
// failures) — several times each, and writes its analysis page (reports.WriteAnalysis) beside
// the matrix it ran.
package analyze

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/internal/lcerr"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

// ErrBadOptions is an analysis that cannot be run as asked (exit 254).
var ErrBadOptions = lcerr.New("bad analyze options")

// Options say what to analyze and how.
type Options struct {
	// Algorithm is a registered algorithm's name; Lock, when its New is set, is the lock itself as
	// a value (registered nowhere), and Algorithm defaults to its name.
	Algorithm string
	Lock      algorithms.Info
	// Runs of each scenario (default 3), from the seed on (seed, seed+1, ...).
	Runs     int
	Parallel int
	// Files are scenario files to draw reproductions from: each of their scenarios whose
	// expectations name the algorithm is run too. Files that are not scenario files are refused.
	Files []string
	// Examples is a directory of scenario files searched the same way, where a file that is not
	// a scenario file (a process client's manifest) is passed over; "" for none.
	Examples string
	// Only, when set, names the scenarios to run (of the catalogue and the reproductions).
	Only    []string
	Run     runner.Options
	Command string
	// Started and Done report progress, as runner.Matrix's.
	Started func(c scenarios.Cell, run int)
	Done    func(rc reports.Cell, err error)
}

// Run plans and runs the analysis, and writes the matrix's pages and analysis.html into
// o.Run.Out. The result is nil when nothing could be run.
func Run(ctx context.Context, o Options) (*runner.MatrixResult, error) {
	info := o.Lock
	if info.New == nil {
		var err error
		if info, err = algorithms.Lookup(o.Algorithm); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
	}
	if o.Runs == 0 {
		o.Runs = 3
	}
	if o.Runs < 1 || o.Parallel < 0 {
		return nil, fmt.Errorf("%w: --runs %d, --parallel %d: give at least 1", ErrBadOptions, o.Runs, o.Parallel)
	}
	plan := scenarios.All()
	var files []reports.AnalysisScenario
	extra, err := reproductions(info.Name, o.Files, o.Examples)
	if err != nil {
		return nil, err
	}
	for _, x := range extra {
		if slices.ContainsFunc(plan, func(s scenarios.Scenario) bool { return s.Name == x.s.Name }) {
			continue // a scenario file may restate a catalogue scenario; the catalogue's stands
		}
		plan = append(plan, x.s)
		files = append(files, reports.AnalysisScenario{Name: x.s.Name, File: x.file})
	}
	if len(o.Only) > 0 {
		for _, name := range o.Only {
			if !slices.ContainsFunc(plan, func(s scenarios.Scenario) bool { return s.Name == name }) {
				return nil, fmt.Errorf("%w: --scenarios: no scenario %q in the catalogue or a reproduction of %s", ErrBadOptions, name, info.Name)
			}
		}
		plan = slices.DeleteFunc(plan, func(s scenarios.Scenario) bool { return !slices.Contains(o.Only, s.Name) })
	}
	meta := reports.AnalysisMeta{Algorithm: info.Name, Summary: info.Summary, Source: info.Source, Command: o.Command,
		Backend: o.Run.Backend, Version: o.Run.Version, Seed: o.Run.Seed, Runs: o.Runs}
	for _, s := range plan {
		c, err := s.CellFor(info, "")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
		as := reports.AnalysisScenario{Name: s.Name, Summary: s.Summary, Reproduces: s.Reproduces, Why: c.Why}
		if i := slices.IndexFunc(files, func(f reports.AnalysisScenario) bool { return f.Name == s.Name }); i >= 0 {
			as.File = files[i].File
		}
		meta.Scenarios = append(meta.Scenarios, as)
	}
	m := runner.Matrix{Algorithms: []string{info.Name}, Scenarios: plan, Runs: o.Runs, Parallel: max(o.Parallel, 1),
		Started: o.Started, Done: o.Done}
	res, runErr := runner.RunMatrix(ctx, m, o.Run)
	if res == nil {
		return nil, runErr
	}
	meta.Started, meta.Elapsed = res.Started, res.Elapsed
	werr := res.Write(o.Run.Out, o.Command, o.Run.Backend, o.Run.Seed)
	if err := reports.WriteAnalysis(o.Run.Out, res.Cells, meta); err != nil {
		werr = err
	}
	if runErr != nil {
		return res, runErr
	}
	return res, werr
}

type fileScenario struct {
	s    scenarios.Scenario
	file string
}

// reproductions are the scenarios of the files (every one must load) and of the examples
// directory (those that load) whose expectations name alg.
func reproductions(alg string, files []string, examples string) ([]fileScenario, error) {
	var out []fileScenario
	add := func(path string, ss []scenarios.Scenario) {
		for _, s := range ss {
			if _, ok := s.Expect[alg]; ok {
				out = append(out, fileScenario{s, path})
			}
		}
	}
	for _, f := range files {
		ss, err := scenarios.LoadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%w: --scenario-file: %w", ErrBadOptions, err)
		}
		add(f, ss)
	}
	if examples == "" {
		return out, nil
	}
	paths, _ := filepath.Glob(filepath.Join(examples, "*.yaml"))
	for _, p := range paths {
		if slices.Contains(files, p) {
			continue
		}
		if ss, err := scenarios.LoadFile(p); err == nil {
			add(filepath.Join("docs", "examples", filepath.Base(p)), ss) // as the README names them
		}
	}
	return out, nil
}

// ExamplesDir is the shipped scenario files' directory (docs/examples beside the shipped
// clients), or "" when there is none.
func ExamplesDir(clients string) string {
	if clients == "" {
		return ""
	}
	d := filepath.Join(filepath.Dir(clients), "docs", "examples")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}
