package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/internal/explore"
	"github.com/lockchaos/lockchaos/internal/runner"
)

// cmdExplore sweeps every named point × every fault against one algorithm and shrinks what breaks
// (internal/explore). Exit 1 when anything unsafe or stuck was found, 0 otherwise.
func cmdExplore(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var alg, points, kinds string
	var budget, session time.Duration
	var runs int
	var noShrink bool
	fs := newFlags("explore", &c)
	fs.StringVar(&alg, "algorithm", "", "algorithm to explore (lockchaos list)")
	fs.DurationVar(&budget, "budget", 5*time.Minute, "no experiment starts after this much time")
	fs.DurationVar(&session, "session-timeout", 0, "ZooKeeper session timeout (default max(TTL, 1s))")
	fs.StringVar(&points, "points", "", "comma-separated named points to explore (default all)")
	fs.StringVar(&kinds, "faults", "", "comma-separated faults to aim: "+strings.Join(explore.Kinds, ", ")+" (default all)")
	fs.IntVar(&runs, "runs", 2, "runs per shrink probe: a size breaks the lock if any run does")
	fs.BoolVar(&noShrink, "no-shrink", false, "survey only: do not shrink the failures found")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	outSet, notHere := given(fs, "duration", "scenario-file")
	if notHere != "" {
		return 0, usagef("explore sizes each run itself: --%s does not apply (use --budget and --ttl)", notHere)
	}
	if err := c.validate(); err != nil {
		return 0, err
	}
	if alg == "" {
		return 0, usagef("explore needs --algorithm (one of: %s)", joinNames())
	}
	if _, err := lookupAlgorithm(alg); err != nil {
		return 0, err
	}
	if budget <= 0 {
		return 0, usagef("--budget %s: give a positive duration like 5m", budget)
	}
	if !outSet {
		c.out = filepath.Join(defaultOut, "explore", alg)
	}
	o := explore.Options{Algorithm: alg, Budget: budget, Out: c.out, TTL: c.ttl, SessionTimeout: session,
		Clients: c.clients, Seed: c.seed, Points: splitList(points), Faults: splitList(kinds), Runs: runs,
		NoShrink: noShrink, Backend: c.backend, Proxies: c.proxy, Version: version,
		ClusterFile: c.clusterFile}
	if !c.quiet && !c.json {
		o.Log = stderr
	}
	rep, err := explore.Run(ctx, o)
	if rep == nil || runner.BadInput(err) {
		return 0, err // bad options or a missing server binary are the user's to fix: 254 with the fix
	}
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(rep); jerr != nil {
			return 0, jerr
		}
	} else if werr := rep.WriteTable(stdout); werr != nil {
		return 0, werr
	}
	if !c.json {
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(c.out, explore.HTMLFile))
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockchaos: explore stopped early: %v (what ran is reported)\n", err)
		return exitHarness, nil
	}
	if len(rep.Broken()) > 0 {
		return exitInvalid, nil
	}
	return exitValid, nil
}
