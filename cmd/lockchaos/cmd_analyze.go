package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/internal/analyze"
	"github.com/lockchaos/lockchaos/internal/procclient"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

// cmdAnalyze runs one lock under every scenario that applies to it, and the shipped reproductions
// that name it, several times each, and writes its analysis page (internal/analyze). Exit 0 when
// every run with an expectation met it, 1 otherwise.
func cmdAnalyze(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var alg, scens string
	var runs, parallel int
	fs := newFlags("analyze", &c)
	fs.StringVar(&alg, "algorithm", "", "the lock to analyze (lockchaos list; a process client's manifest too)")
	fs.IntVar(&runs, "runs", 3, "runs of each scenario, from --seed on")
	fs.IntVar(&parallel, "parallel", 1, "runs at once")
	fs.StringVar(&scens, "scenarios", "", "comma-separated scenarios to run (default: every one, and the reproductions naming the lock)")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	outSet, notHere := given(fs, "duration", "full")
	if notHere != "" {
		return 0, usagef("analyze runs each scenario as the catalogue sizes it: --%s does not apply", notHere)
	}
	if err := c.validate(); err != nil {
		return 0, err
	}
	if alg == "" {
		return 0, usagef("analyze needs --algorithm (one of: %s)", joinNames())
	}
	if _, err := lookupAlgorithm(alg); err != nil {
		return 0, err
	}
	if runs < 1 || parallel < 1 {
		return 0, usagef("--runs %d, --parallel %d: give at least 1", runs, parallel)
	}
	if !outSet {
		c.out = filepath.Join(defaultOut, "analyze", alg)
	}
	o := analyze.Options{Algorithm: alg, Runs: runs, Parallel: parallel, Run: c.options(),
		Only: splitList(scens), Examples: analyze.ExamplesDir(procclient.ShippedDir()), Command: "lockchaos analyze " + strings.Join(args, " ")}
	if c.scenarioFile != "" {
		o.Files = []string{c.scenarioFile}
	}
	talk := !c.quiet && !c.json
	if talk {
		o.Started = func(cell scenarios.Cell, run int) {
			fmt.Fprintf(stderr, "analyze %s: %s (run %d of %d)\n", alg, cell.Scenario, max(run, 1), runs)
		}
		o.Done = func(rc reports.Cell, _ error) { fmt.Fprintln(stdout, cellLine(rc, c.out)) }
	}
	res, err := analyze.Run(ctx, o)
	if res == nil || runner.BadInput(err) {
		return 0, err
	}
	if talk {
		fmt.Fprintf(stdout, "%d runs (%d n/a) in %s: %s — %s\n", res.Ran, res.NA, res.Elapsed.Round(time.Second),
			summaryText(res.Summary), filepath.Join(c.out, reports.AnalysisFile))
	}
	if err != nil {
		return 0, err
	}
	if res.Mismatched > 0 {
		return exitInvalid, nil
	}
	return exitValid, nil
}
