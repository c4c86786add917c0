package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/internal/soak"
)

// progressEvery is how often a soak whose stderr is not a terminal prints its progress.
const progressEvery = 15 * time.Second

// cmdSoak runs one or more algorithms for a long time under a random mix of faults
// (internal/soak). Exit 0 when every algorithm is safe, 1 when one is unsafe or stuck, 2 when one
// is unknown.
func cmdSoak(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var alg, algs, kinds, replay, topology string
	var soakTime time.Duration
	var rate float64
	var emitScenario bool
	fs := newFlags("soak", &c)
	fs.StringVar(&alg, "algorithm", "", "algorithm to soak (lockchaos list)")
	fs.StringVar(&algs, "algorithms", "", "comma-separated algorithms, each soaked on the same plan and compared")
	fs.DurationVar(&soakTime, "time", 0, "how long each algorithm runs under faults (default 10m)")
	fs.Float64Var(&rate, "rate", 0, "faults per minute (default 12)")
	fs.StringVar(&kinds, "faults", "", "comma-separated faults to mix: "+strings.Join(soak.TemplateNames(), ", ")+" (default: every one the topologies take)")
	fs.StringVar(&replay, "replay", "", "directory of an earlier soak: run its plan and seed again")
	fs.StringVar(&topology, "topology", "", "run every algorithm on this one of its topologies (lockchaos list) instead of its default")
	fs.BoolVar(&emitScenario, "emit-scenario", false, "write the faults of each algorithm's first violation, shrunk, as a scenario file")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	outSet, notHere := given(fs, "duration", "scenario-file", "full")
	if notHere != "" {
		return 0, usagef("soak plans its own run: --%s does not apply (use --time, --rate and --faults)", notHere)
	}
	if err := c.validate(); err != nil {
		return 0, err
	}
	names := splitList(algs)
	switch {
	case alg != "" && len(names) > 0:
		return 0, usagef("give --algorithm or --algorithms, not both")
	case alg != "":
		names = []string{alg}
	case len(names) == 0:
		return 0, usagef("soak needs --algorithm A or --algorithms a,b,c (one of: %s)", joinNames())
	}
	for _, n := range names {
		if _, err := lookupAlgorithm(n); err != nil {
			return 0, err
		}
	}
	if !outSet {
		c.out = filepath.Join(defaultOut, "soak")
	}
	o := soak.Options{Algorithms: names, Time: soakTime, Rate: rate, Faults: splitList(kinds), Replay: replay,
		Emit: emitScenario, Clients: c.clients, TTL: c.ttl, Out: c.out, Backend: c.backend, Proxies: c.proxy,
		ClusterFile: c.clusterFile, Version: version, Topology: topology}
	if replay == "" {
		o.Seed = c.seed
	} else if c.seedSet {
		return 0, usagef("--replay runs the saved plan with its own seed: leave out --seed")
	}
	if !c.quiet && !c.json {
		o.Log = stderr
		o.Progress = progress(stderr)
	}
	rep, err := soak.Run(ctx, o)
	if rep == nil || runner.BadInput(err) {
		return 0, err
	}
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(rep); jerr != nil {
			return 0, jerr
		}
	} else {
		for _, a := range rep.Algorithms {
			fmt.Fprintln(stdout, soakLine(a))
		}
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(c.out, soak.HTMLFile))
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockchaos: soak stopped early: %v (what ran is reported)\n", err)
		return exitHarness, nil
	}
	code := exitValid
	for _, a := range rep.Algorithms {
		switch {
		case a.Verdict == checker.Unsafe || a.Verdict == checker.Stuck:
			return exitInvalid, nil
		case a.Verdict != checker.Safe:
			code = exitUnknown
		}
	}
	return code, nil
}

// soakLine is one algorithm's outcome in one line.
func soakLine(a soak.AlgorithmResult) string {
	if a.NotRun != "" {
		return fmt.Sprintf("%s: not run: %s", a.Algorithm, a.NotRun)
	}
	s := fmt.Sprintf("%s: %s — %d incidents (%d violations) in %s of chaos, %.3g an hour (%.3g–%.3g), %d faults fired, %d operations, lock held %.0f%%",
		a.Algorithm, a.Verdict, a.Incidents, a.Violations, history.FormatMs(a.ChaosMs), a.PerHour.Value, a.PerHour.Lo, a.PerHour.Hi,
		a.FaultsFired, a.Operations, 100*a.HeldShare)
	if len(a.Groups) > 0 {
		g := a.Groups[0]
		s += fmt.Sprintf("; most under %s (%d incidents, %s)", g.Cause, g.Incidents, g.Kind)
	}
	if a.Verdict != checker.Unsafe && a.Evidence != "" && a.Evidence != checker.EvidenceOK {
		s += "; " + a.Evidence
	}
	if a.Error != "" {
		s += "; the run ended early: " + a.Error
	}
	if a.Reproduced != nil {
		s += fmt.Sprintf("; the replayed soak's first violation happened again under its faults: %v", *a.Reproduced)
	}
	if a.Emitted != "" {
		s += "; first violation's faults: " + a.Emitted
	}
	return s
}

// progress prints the live check: a line every progressEvery, and at once when the first
// violation shows.
func progress(w io.Writer) func(string, checker.Progress) {
	var mu sync.Mutex
	var last time.Time
	lastAlg, seen := "", 0
	return func(alg string, p checker.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if alg != lastAlg {
			lastAlg, seen, last = alg, 0, time.Now()
		}
		if time.Since(last) < progressEvery && (seen > 0 || p.Violations == 0) {
			return
		}
		line := fmt.Sprintf("soak %s: %s in, %d operations, %d faults fired, %d violations", alg,
			history.FormatMs(p.AtMs), p.Ops, p.FaultsFired, p.Violations)
		if p.FirstViolationMs >= 0 {
			line += " (the first at " + history.FormatMs(p.FirstViolationMs) + ")"
		}
		fmt.Fprintln(w, line)
		last, seen = time.Now(), p.Violations
	}
}
