package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	var algs, scens, shard, topology string
	var runs, parallel int
	fs := newFlags("matrix", &c)
	fs.StringVar(&topology, "topology", "", "run every algorithm on this one of its topologies instead of its default")
	fs.StringVar(&algs, "algorithms", "", "comma-separated algorithms, or all (default: the seven seed algorithms)")
	fs.StringVar(&scens, "scenarios", "", "comma-separated scenarios (default: the catalogue)")
	fs.IntVar(&runs, "runs", 1, "runs per cell")
	fs.StringVar(&shard, "shard", "", "run only shard i of n (i/n, from 1), for CI fan-out; lockchaos merge joins the shards")
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
	sh, err := runner.ParseShard(shard)
	if err != nil {
		return 0, err
	}
	m := runner.Matrix{Algorithms: scenarios.Seed, Runs: runs, Shard: sh, Parallel: parallel, Topology: topology}
	if algs == "all" {
		m.Algorithms = algorithms.Names()
	} else if algs != "" {
		m.Algorithms = splitList(algs)
		for _, a := range m.Algorithms {
			if _, err := lookupAlgorithm(a); err != nil {
				return 0, err
			}
		}
	}
	for _, a := range m.Algorithms {
		if info, err := lookupAlgorithm(a); err == nil && topology != "" && !slices.Contains(info.Topologies, topology) {
			return 0, usagef("--topology %s: %s runs on %s (leave it out of --algorithms)", topology, a, strings.Join(info.Topologies, ", "))
		}
	}
	if scens == "" {
		m.Scenarios = scenarios.All()
	} else {
		for _, name := range splitList(scens) {
			s, err := lookupScenario(name, c.scenarioFile)
			if err != nil {
				return 0, err
			}
			m.Scenarios = append(m.Scenarios, s)
		}
	}

	nRuns, nNA, err := m.Planned()
	if err != nil {
		return 0, err
	}
	o := c.options()
	talk := !c.quiet && !c.json
	if talk {
		fmt.Fprintf(stderr, "lockchaos: matrix of %d runs (%d n/a) on %s, shard %d/%d, seed %d, writing %s\n",
			nRuns, nNA, c.backend, sh.I, sh.N, c.seed, o.Out)
	}
	bar, barVisible := newBar(nRuns, !talk, stderr)
	m.Started = func(cell scenarios.Cell, _ int) { bar.Describe(cell.Scenario + "/" + cell.Algorithm) }
	m.Done = func(rc reports.Cell, _ error) {
		if !barVisible && !c.json {
			fmt.Fprintln(stdout, cellLine(rc, o.Out))
		}
		_ = bar.Add(1)
	}
	res, runErr := runner.RunMatrix(ctx, m, o)
	if res == nil {
		return 0, runErr
	}
	_ = bar.Finish()
	if barVisible {
		fmt.Fprintln(stderr)
	}
	command := "lockchaos matrix " + strings.Join(args, " ")
	if err := res.Write(o.Out, command, c.backend, c.seed); err != nil {
		return 0, fmt.Errorf("write matrix: %w", err)
	}
	if c.json {
		if err := reports.EncodeResults(stdout, res.Cells, res.Meta(command, c.backend, c.seed)); err != nil {
			return 0, err
		}
	} else if !c.quiet {
		fmt.Fprintf(stdout, "%d runs (%d n/a) in %s: %s — %s/index.html\n",
			res.Ran, res.NA, res.Elapsed.Round(time.Second), summaryText(res.Summary), o.Out)
	}
	if runErr != nil {
		return 0, runErr
	}
	if res.Mismatched > 0 {
		return exitInvalid, nil
	}
	return exitValid, nil
}

func cellLine(rc reports.Cell, out string) string {
	if rc.Result == nil {
		return fmt.Sprintf("%s × %s: error: %s", rc.Algorithm, rc.Scenario, rc.Err)
	}
	return verdictLine(rc.Result, filepath.Join(out, rc.Dir, reports.ReportFile))
}

func newBar(n int, quiet bool, w io.Writer) (*progressbar.ProgressBar, bool) {
	f, ok := w.(*os.File)
	visible := !quiet && ok && term.IsTerminal(int(f.Fd()))
	return progressbar.NewOptions(n, progressbar.OptionSetWriter(w), progressbar.OptionShowCount(),
		progressbar.OptionSetVisibility(visible),
		progressbar.OptionSetElapsedTime(true), progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish()), visible
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
