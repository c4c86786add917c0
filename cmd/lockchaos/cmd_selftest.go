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
// (docs/design.md#mutants): exit 0 only when every mutant is caught and every real cell is as expected.
func cmdSelftest(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var scens string
	var runs, parallel int
	fs := newFlags("selftest", &c)
	fs.StringVar(&scens, "scenarios", "", "comma-separated scenarios (default: the catalogue)")
	fs.IntVar(&runs, "runs", 1, "runs per cell; a cell passes only when every run matches (n/N, no retry)")
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
	if runs > 1 && !c.quiet && !c.json {
		for _, t := range res.Tally {
			fmt.Fprintln(stdout, t)
		}
	}
	for _, miss := range res.Missed {
		fmt.Fprintf(stderr, "lockchaos: missed: %s\n", miss)
	}
	for _, s := range res.Uncaught {
		fmt.Fprintf(stderr, "lockchaos: scenario %s names no mutant it catches: it tests nothing\n", s)
	}
	// The exit code follows the summary line: passed is 0; failed is 1, or 255 (254 for bad
	// input) when a run could not be carried out, which the line says.
	passed := res.Passed() && err == nil && res.Errors == 0
	if !c.quiet {
		verdict := "passed"
		if !passed {
			verdict = "FAILED"
		}
		line := fmt.Sprintf("selftest %s: %d cells × %d run%s (%d n/a) in %s, %d missed", verdict,
			len(res.Tally), runs, plural(runs), res.NA, res.Elapsed.Round(time.Second), len(res.Missed))
		if res.Errors > 0 {
			line += fmt.Sprintf(", %d run%s hit a harness error", res.Errors, plural(res.Errors))
		}
		if err != nil {
			line += fmt.Sprintf(" (%v)", err)
		}
		fmt.Fprintf(stdout, "%s — %s\n", line, filepath.Join(o.Out, runner.SelftestPage))
	}
	switch {
	case err != nil:
		return 0, err
	case res.Errors > 0:
		return exitHarness, nil
	case !passed:
		return exitInvalid, nil
	}
	return exitValid, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
