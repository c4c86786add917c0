package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var alg, scen, expect, topology string
	fs := newFlags("run", &c)
	fs.StringVar(&topology, "topology", "", "run the algorithm on this one of its topologies (lockchaos list) instead of its default")
	fs.StringVar(&alg, "algorithm", "", "algorithm to run (lockchaos list)")
	fs.StringVar(&scen, "scenario", "baseline", "scenario to run (lockchaos list)")
	fs.StringVar(&expect, "expect", "", "exit 0 when the verdict matches: "+strings.Join(checker.ExpectedNames(), ", ")+", or a catalogue code ("+strings.Join(checker.ExpectationCodes(), ", ")+")")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if err := c.validate(); err != nil {
		return 0, err
	}
	if alg == "" {
		return 0, usagef("run needs --algorithm (one of: %s)", joinNames())
	}
	if expect != "" {
		long, ok := checker.ParseExpected(expect)
		if !ok {
			return 0, usagef("--expect %q: want one of %s, or a catalogue code (%s)", expect,
				strings.Join(checker.ExpectedNames(), ", "), strings.Join(checker.ExpectationCodes(), ", "))
		}
		expect = long
	}
	s, err := lookupScenario(scen, c.scenarioFile)
	if err != nil {
		return 0, err
	}
	info, err := lookupAlgorithm(alg)
	if err != nil {
		return 0, err
	}
	if topology != "" && !slices.Contains(info.Topologies, topology) {
		return 0, usagef("--topology %s: %s runs on %s", topology, alg, strings.Join(info.Topologies, ", "))
	}
	cell, err := s.CellOn(alg, topology)
	if err != nil {
		return 0, usagef("%v", err)
	}
	if cell.NA != "" {
		return 0, usagef("scenario %s does not apply to %s: %s", scen, alg, cell.NA)
	}
	if expect != "" {
		cell.Expected = expect
	}
	o := c.options()
	if !c.quiet && !c.json {
		fmt.Fprintf(stderr, "lockchaos: %s × %s on %s, seed %d\n", alg, scen, c.backend, c.seed)
		o.Log = stderr // e.g. stale proxies removed from an external cluster's toxiproxy-servers
	}
	rc, _, err := runner.RunCell(ctx, cell, o, 0)
	if err != nil && rc.Result == nil {
		return 0, err
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockchaos: the run ended early: %v (its history was checked)\n", err)
	}
	r := rc.Result
	dir := runner.Dir(o.Out, cell, 0)
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return 0, err
		}
	} else {
		fmt.Fprintln(stdout, verdictLine(r, filepath.Join(dir, "report.html")))
	}
	if err != nil {
		return exitHarness, nil
	}
	if expect != "" {
		if checker.Matches(r, expect) { // r.Matches, decided by the same judge
			return exitValid, nil
		}
		return exitInvalid, nil
	}
	return verdictCode(r.Verdict), nil
}

// verdictLine is the one-line summary of a run: the verdict and what decided it (the checker's
// decided_by, docs/design.md#evidence).
func verdictLine(r *checker.Result, report string) string {
	line := fmt.Sprintf("%s × %s: %s", r.Algorithm, r.Scenario, r.Verdict)
	if r.ViolationClass != nil {
		line += fmt.Sprintf(" (%s class)", *r.ViolationClass)
	}
	if r.TTDMs != nil {
		line += fmt.Sprintf(" at %s", history.FormatMs(*r.TTDMs))
	}
	if r.DecidedBy != "" {
		line += " — " + r.DecidedBy
	}
	if r.Stopped != "" {
		line += "; stopped once decided (--full runs the whole time)"
	}
	line += fmt.Sprintf("; seed %d — %s", r.Seed, report)
	if r.Expected != nil && r.Matches != nil {
		if *r.Matches {
			line += " [as expected]"
		} else {
			line += fmt.Sprintf(" [expected %s]", *r.Expected)
		}
	}
	return line
}

func verdictCode(v checker.Verdict) int {
	switch v {
	case checker.Safe:
		return exitValid
	case checker.Unknown:
		return exitUnknown
	default:
		return exitInvalid
	}
}

func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	var asJSON, write bool
	fs := newCommand("check")
	fs.BoolVar(&asJSON, "json", false, "print the result as JSON")
	fs.BoolVar(&write, "write", false, "rewrite the run's result.json and reports from the re-check (default: leave the run as it is)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 1 {
		return 0, usagef("check needs one run directory (e.g. lockchaos check %s/client-pause/token)", defaultOut)
	}
	dir := pos[0]
	if _, err := os.Stat(filepath.Join(dir, harness.HistoryFile)); err != nil {
		return 0, usagef("no %s in %s: give the directory of a run", harness.HistoryFile, dir)
	}
	if os.Getenv("GOGC") == "" {
		// A long history is checked in bounded segments, a few tens of MB live: collecting
		// garbage at 4× that instead of 2× saves a quarter of the check's time.
		debug.SetGCPercent(400)
	}
	out, err := runner.CheckDir(dir, runner.CheckOptions{Write: write, Progress: checkProgress(stderr)})
	if err != nil {
		return 0, err
	}
	r := &out.Result
	for _, w := range r.Warnings {
		fmt.Fprintf(stderr, "lockchaos: warning: %s\n", w)
	}
	code, how := verdictCode(r.Verdict), "by verdict (the run recorded no expectation)"
	if r.Expected != nil && r.Matches != nil {
		code, how = exitInvalid, "by the run's recorded expectation, "+*r.Expected
		if *r.Matches {
			code = exitValid
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return 0, err
		}
	} else {
		fmt.Fprintln(stdout, verdictLine(r, filepath.Join(dir, "report.html")))
	}
	fmt.Fprintf(stderr, "lockchaos: exit %d %s\n", code, how)
	return code, nil
}

// checkProgress shows a long check's progress on a terminal (nothing otherwise, and nothing for a
// history read in under a second).
func checkProgress(stderr io.Writer) func(stage string, done, total int64) {
	var bar *progressbar.ProgressBar
	began := time.Now()
	return func(stage string, done, total int64) {
		if bar == nil {
			if stage != "read" || time.Since(began) < time.Second || total <= 0 {
				return
			}
			f, ok := stderr.(*os.File)
			if !ok || !term.IsTerminal(int(f.Fd())) {
				return
			}
			bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(stderr), progressbar.OptionShowBytes(true),
				progressbar.OptionSetElapsedTime(true), progressbar.OptionSetPredictTime(true),
				progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish(),
				progressbar.OptionSetDescription("reading and checking the history"))
		}
		switch stage {
		case "read":
			_ = bar.Set64(done)
		case "check":
			bar.Describe("checking (porcupine, exclusion, evidence)")
		case "report":
			bar.Describe("writing the reports")
		}
	}
}

func lookupScenario(name, file string) (scenarios.Scenario, error) {
	if file != "" {
		extra, err := scenarios.LoadFile(file)
		if err != nil {
			return scenarios.Scenario{}, usagef("%v", err)
		}
		for _, s := range extra {
			if s.Name == name {
				return s, nil
			}
		}
	}
	s, err := scenarios.Lookup(name)
	if err != nil {
		return s, usagef("%v", err)
	}
	return s, nil
}
