package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

// cmdSelftest runs every scenario against the mutants it must catch and its real algorithms
// (DESIGN.md §11): exit 0 only when every mutant is caught and every real cell is as expected.
func cmdSelftest(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var scens string
	var runs, parallel int
	fs := newFlags("selftest", &c)
	fs.StringVar(&scens, "scenarios", "", "comma-separated scenarios (default: the catalogue)")
	fs.IntVar(&runs, "runs", 1, "runs per cell")
	fs.IntVar(&parallel, "parallel", 2, "cells run at once")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if err := c.validate(); err != nil {
		return 0, err
	}
	if runs < 1 || parallel < 1 {
		return 0, usagef("--runs %d --parallel %d: give at least 1 each", runs, parallel)
	}
	ss := scenarios.All()
	if scens != "" {
		ss = nil
		for _, name := range splitList(scens) {
			s, err := lookupScenario(name, c.scenarioFile)
			if err != nil {
				return 0, err
			}
			ss = append(ss, s)
		}
	}
	o := c.options()
	m := runner.Matrix{Runs: runs, Parallel: parallel}
	if !c.quiet && !c.json {
		m.Done = func(rc reports.Cell, _ error) { fmt.Fprintln(stdout, cellLine(rc, o.Out)) }
	}
	command := "lockchaos selftest " + strings.Join(args, " ")
	res, err := runner.Selftest(ctx, ss, m, o, command)
	if res == nil {
		return 0, err
	}
	for _, r := range res.Retried {
		fmt.Fprintf(stderr, "lockchaos: retried: %s\n", r)
	}
	for _, miss := range res.Missed {
		fmt.Fprintf(stderr, "lockchaos: missed: %s\n", miss)
	}
	for _, s := range res.Uncaught {
		fmt.Fprintf(stderr, "lockchaos: scenario %s names no mutant it catches: it tests nothing\n", s)
	}
	if !c.quiet {
		verdict := "passed"
		if !res.Passed() {
			verdict = "FAILED"
		}
		fmt.Fprintf(stdout, "selftest %s: %d runs (%d n/a) in %s, %d missed, %d retried — %s\n", verdict,
			res.Ran, res.NA, res.Elapsed.Round(time.Second), len(res.Missed), len(res.Retried),
			filepath.Join(o.Out, runner.SelftestPage))
	}
	if err != nil {
		return 0, err
	}
	if !res.Passed() {
		return exitInvalid, nil
	}
	return exitValid, nil
}
