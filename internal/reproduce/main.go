// Command reproduce measures how reliably and how fast the catalogue reproduces each known failure
// and catches each mutant: every cell of the selftest (DESIGN.md §11: each scenario × its real
// algorithms and the mutants it must catch), R runs each (fresh cluster, seed s+run), and writes
// the table (cell, reproduced or caught /R, evidence ok /R, median and max time to first
// violation) to the "Detection speed" section of BENCHMARKS.md. It is `make reproduce`: a
// benchmark, never a timed test.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/internal/benchmd"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

type row struct {
	cell              scenarios.Cell
	matched, runs     int
	evidenceOK        int
	ttds              []float64
	misses            []string
	unsafeExpectation bool
}

func main() {
	runs := flag.Int("runs", 20, "runs per cell")
	out := flag.String("out", "out/reproduce", "where the runs are written")
	bench := flag.String("bench", "BENCHMARKS.md", "markdown file to update")
	only := flag.String("scenarios", "", "comma-separated scenarios (default: all)")
	parallel := flag.Int("parallel", 1, "cells run at once")
	flag.Parse()
	redis.SetLogger(quiet{}) // failed dials under faults are expected; each run's history has them
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	m := runner.Matrix{Runs: *runs, Parallel: *parallel,
		Keep: func(c scenarios.Cell) bool { return c.NA == "" && c.Expected != "" }}
	for _, s := range scenarios.All() {
		if *only == "" || slices.Contains(strings.Split(*only, ","), s.Name) {
			m.Scenarios = append(m.Scenarios, s)
		}
	}
	cells, algs, err := runner.SelftestCells(m.Scenarios)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reproduce:", err)
		os.Exit(254)
	}
	m.Cells, m.Algorithms = cells, algs
	var rows []*row
	byCell := map[string]*row{}
	for _, c := range cells {
		if m.Keep(c) {
			r := &row{cell: c, unsafeExpectation: c.Expected != "safe"}
			rows = append(rows, r)
			byCell[c.Scenario+"/"+c.Algorithm] = r
		}
	}
	start := time.Now()
	m.Done = func(rc reports.Cell, err error) {
		r := byCell[rc.Scenario+"/"+rc.Algorithm]
		r.runs++
		fmt.Fprintf(os.Stderr, "%s × %s run %d: %s\n", rc.Algorithm, rc.Scenario, rc.Run, verdictOf(rc))
		if err != nil || rc.Result == nil {
			r.misses = append(r.misses, fmt.Sprintf("run %d: %v", rc.Run, err))
			return
		}
		res := rc.Result
		if res.Evidence == "ok" {
			r.evidenceOK++
		}
		if res.Matches != nil && *res.Matches {
			r.matched++
			if res.TTDMs != nil {
				r.ttds = append(r.ttds, *res.TTDMs)
			}
		} else {
			r.misses = append(r.misses, fmt.Sprintf("run %d: %s", rc.Run, res.Verdict))
		}
	}
	// Seeds 1..R: run i of every cell has seed i. A harness error is counted as a miss of its run.
	_, _ = runner.RunMatrix(ctx, m, runner.Options{Out: *out, Seed: 1})

	var b strings.Builder
	fmt.Fprintf(&b, "`go run ./internal/reproduce --runs %d` (make reproduce): each cell %d times, fresh servers and seed each run; %s in all.\n"+
		"Reproduced = runs whose verdict matched the catalogue's expectation (for a mutant: runs that caught it). Evidence ok = runs that showed they could have failed (DESIGN.md §10: every planned fault fired, writes and contended grants in the danger window; an unsafe or stuck run's violation is its own evidence). TTD = time from run start to the first violating operation (stuck: to when the stall reached the limit).\n\n",
		*runs, *runs, time.Since(start).Round(time.Second))
	b.WriteString("| cell | expected | reproduced | evidence ok | median TTD | max TTD | misses |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		med, mx := "—", "—"
		if len(r.ttds) > 0 {
			slices.Sort(r.ttds)
			med = fmt.Sprintf("%.0f ms", r.ttds[len(r.ttds)/2])
			mx = fmt.Sprintf("%.0f ms", r.ttds[len(r.ttds)-1])
		}
		miss := strings.Join(r.misses, "; ")
		if miss == "" {
			miss = "—"
		}
		fmt.Fprintf(&b, "| %s × %s | %s | %d/%d | %d/%d | %s | %s | %s |\n", r.cell.Algorithm, r.cell.Scenario,
			r.cell.Expected, r.matched, r.runs, r.evidenceOK, r.runs, med, mx, miss)
	}
	writeTargets(&b, rows, *runs)
	fmt.Print(b.String())
	if err := benchmd.Update(*bench, "Detection speed", b.String()); err != nil {
		fmt.Fprintln(os.Stderr, "reproduce:", err)
		os.Exit(1)
	}
}

// writeTargets sums the table up against the targets of DESIGN.md §10–11: every mutant caught in
// ≥ 95% of its runs in each scenario that must catch it, with a median TTD ≤ 3 s in each; every
// real cell with evidence ok in ≥ 95% of its runs.
func writeTargets(b *strings.Builder, rows []*row, runs int) {
	need := (runs*19 + 19) / 20 // 19/20, rounded up
	type mutant struct {
		cells        []string
		caught, runs int // of its worst cell
		worstTTD     float64
		ok           bool
	}
	mutants := map[string]*mutant{}
	var names []string
	realCells, realOK := 0, 0
	var realMisses []string
	for _, r := range rows {
		info, err := algorithms.Lookup(r.cell.Algorithm)
		if err != nil || info.Mutant == "" {
			realCells++
			if r.evidenceOK >= need && r.matched >= need {
				realOK++
			} else {
				realMisses = append(realMisses, fmt.Sprintf("%s × %s (%d/%d, evidence %d/%d)",
					r.cell.Algorithm, r.cell.Scenario, r.matched, r.runs, r.evidenceOK, r.runs))
			}
			continue
		}
		m := mutants[r.cell.Algorithm]
		if m == nil {
			m = &mutant{caught: r.matched, runs: r.runs, ok: true}
			mutants[r.cell.Algorithm] = m
			names = append(names, r.cell.Algorithm)
		}
		med := -1.0
		if len(r.ttds) > 0 {
			med = r.ttds[len(r.ttds)/2] // sorted by the table above
		}
		m.cells = append(m.cells, fmt.Sprintf("%s %d/%d, %s", r.cell.Scenario, r.matched, r.runs, fmtMs(med)))
		if r.matched < m.caught {
			m.caught, m.runs = r.matched, r.runs
		}
		m.worstTTD = max(m.worstTTD, med)
		if r.matched < need || med < 0 || med > 3000 {
			m.ok = false
		}
	}
	slices.Sort(names)
	fmt.Fprintf(b, "\n**Targets** (DESIGN.md §10–11, ≥ %d/%d runs): real cells reproduced with evidence ok: %d of %d", need, runs, realOK, realCells)
	if len(realMisses) > 0 {
		fmt.Fprintf(b, " (not: %s)", strings.Join(realMisses, "; "))
	}
	b.WriteString(".\n\n| mutant | caught (worst cell) | median TTD (slowest cell) | each cell: caught, median TTD | target |\n|---|---|---|---|---|\n")
	for _, n := range names {
		m := mutants[n]
		target := "met"
		if !m.ok {
			target = "**not met**"
		}
		fmt.Fprintf(b, "| %s | %d/%d | %s | %s | %s |\n", n, m.caught, m.runs, fmtMs(m.worstTTD), strings.Join(m.cells, "; "), target)
	}
}

func fmtMs(v float64) string {
	if v < 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f ms", v)
}

func verdictOf(rc reports.Cell) string {
	if rc.Result == nil {
		return "error: " + rc.Err
	}
	return string(rc.Result.Verdict)
}
