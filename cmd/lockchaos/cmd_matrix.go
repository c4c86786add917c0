package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

func cmdMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var algs, scens, shard string
	var runs, parallel int
	fs := newFlags("matrix", &c)
	fs.StringVar(&algs, "algorithms", "", "comma-separated algorithms, or all (default: the seven seed algorithms)")
	fs.StringVar(&scens, "scenarios", "", "comma-separated scenarios (default: the catalogue)")
	fs.IntVar(&runs, "runs", 1, "runs per cell")
	fs.StringVar(&shard, "shard", "", "run only shard i of n (i/n, from 1), for CI fan-out")
	fs.IntVar(&parallel, "parallel", 1, "cells run at once")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if err := c.validate(); err != nil {
		return 0, err
	}
	if runs < 1 {
		return 0, usagef("--runs %d: give at least 1", runs)
	}
	if parallel < 1 {
		return 0, usagef("--parallel %d: give at least 1", parallel)
	}
	si, sn, err := parseShard(shard)
	if err != nil {
		return 0, err
	}
	algList := scenarios.Seed
	if algs == "all" {
		algList = algorithms.Names()
	} else if algs != "" {
		algList = splitList(algs)
		for _, a := range algList {
			if _, err := lookupAlgorithm(a); err != nil {
				return 0, err
			}
		}
	}
	var scenList []scenarios.Scenario
	if scens == "" {
		scenList = scenarios.All()
	} else {
		for _, name := range splitList(scens) {
			s, err := lookupScenario(name, c.scenarioFile)
			if err != nil {
				return 0, err
			}
			scenList = append(scenList, s)
		}
	}

	type job struct {
		cell scenarios.Cell
		run  int
	}
	var jobs []job
	var naCells []reports.Cell
	idx := 0
	for _, s := range scenList {
		for _, a := range algList {
			cell, err := s.Cell(a)
			if err != nil {
				return 0, usagef("%v", err)
			}
			for r := 1; r <= runs; r++ {
				idx++
				if (idx-1)%sn != si-1 {
					continue
				}
				run := r
				if runs == 1 {
					run = 0
				}
				if cell.NA != "" {
					naCells = append(naCells, reports.Cell{Scenario: s.Name, Algorithm: a, Run: run, NA: cell.NA})
					continue
				}
				jobs = append(jobs, job{cell, run})
			}
		}
	}

	o := c.options()
	start := time.Now()
	if !c.quiet {
		fmt.Fprintf(stderr, "lockchaos: matrix of %d runs (%d n/a) on %s, seed %d, writing %s\n",
			len(jobs), len(naCells), c.backend, c.seed, o.Out)
	}
	bar, barVisible := newBar(len(jobs), c.quiet, stderr)
	results := make([]reports.Cell, len(jobs))
	var harnessErr error
	var mu sync.Mutex
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			name := j.cell.Scenario + "/" + j.cell.Algorithm
			bar.Describe(name)
			rc, _, err := runner.RunCell(ctx, j.cell, o, j.run)
			mu.Lock()
			defer mu.Unlock()
			results[i] = rc
			if err != nil {
				if rc.Err == "" {
					results[i].Err = err.Error()
				}
				if harnessErr == nil && ctx.Err() == nil {
					harnessErr = fmt.Errorf("%s: %w", name, err)
				}
				if badInput(err) {
					harnessErr = err // the same cause will fail every cell: say it once, exit 254
				}
			}
			if !barVisible {
				fmt.Fprintln(stdout, cellLine(rc))
			}
			_ = bar.Add(1)
		}()
	}
	wg.Wait()
	_ = bar.Finish()
	if barVisible {
		fmt.Fprintln(stderr)
	}

	cells := append(results, naCells...)
	meta := reports.MatrixMeta{Title: "lockchaos matrix", Command: "lockchaos matrix " + strings.Join(args, " "),
		Backend: c.backend, Version: version, Seed: c.seed, Started: start,
		Algorithms: algList, Scenarios: scenarioNames(scenList)}
	if err := reports.WriteMatrix(o.Out, cells, meta); err != nil {
		return 0, fmt.Errorf("write matrix: %w", err)
	}
	mismatched := 0
	for _, rc := range results {
		if rc.Result == nil || rc.Result.Matches == nil || !*rc.Result.Matches {
			if rc.Result == nil || rc.Result.Expected != nil {
				mismatched++
			}
		}
	}
	if !c.quiet {
		fmt.Fprintf(stdout, "%d runs in %s: %d as expected, %d not — %s/index.html\n",
			len(results), time.Since(start).Round(time.Second), len(results)-mismatched, mismatched, o.Out)
	}
	if harnessErr != nil {
		return 0, harnessErr
	}
	if mismatched > 0 {
		return exitInvalid, nil
	}
	return exitValid, nil
}

func cellLine(rc reports.Cell) string {
	if rc.Result == nil {
		return fmt.Sprintf("%s × %s: error: %s", rc.Algorithm, rc.Scenario, rc.Err)
	}
	return verdictLine(rc.Result, rc.Dir+"/report.html")
}

func newBar(n int, quiet bool, w io.Writer) (*progressbar.ProgressBar, bool) {
	f, ok := w.(*os.File)
	visible := !quiet && ok && term.IsTerminal(int(f.Fd()))
	return progressbar.NewOptions(n, progressbar.OptionSetWriter(w), progressbar.OptionShowCount(),
		progressbar.OptionSetVisibility(visible),
		progressbar.OptionSetElapsedTime(true), progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish()), visible
}

func parseShard(s string) (int, int, error) {
	if s == "" {
		return 1, 1, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, usagef("--shard %q: want i/n with 1 ≤ i ≤ n, e.g. --shard 2/4", s)
	}
	return i, n, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func scenarioNames(ss []scenarios.Scenario) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}
