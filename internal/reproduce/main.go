// Command reproduce measures how reliably and how fast the catalogue reproduces each known failure
// and catches each mutant: every cell of the selftest (docs/design.md#mutants: each scenario × its real
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
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/benchmd"
	"github.com/lockchaos/lockchaos/internal/procclient"
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
	onlyAlgs := flag.String("algorithms", "", "comma-separated algorithms and mutants (default: all of each scenario's cells); "+
		"an algorithm outside the selftest (a library, a shipped process client) adds its measured cells")
	parallel := flag.Int("parallel", 1, "cells run at once")
	merge := flag.Bool("merge", false, "replace only the re-run cells' rows of the existing table (with --scenarios), keeping the others")
	rewrite := flag.Bool("rewrite", false, "run nothing: read the table and write it again with its targets summed anew")
	flag.Parse()
	if *rewrite {
		if err := rewriteTable(*bench); err != nil {
			fmt.Fprintln(os.Stderr, "reproduce: --rewrite:", err)
			os.Exit(1)
		}
		return
	}
	redis.SetLogger(quiet{}) // failed dials under faults are expected; each run's history has them
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// A bad input (a process client that cannot run here, a missing server) fails every run
	// alike: the first one ends the reproduction, and no row of harness errors reaches the table.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	m := runner.Matrix{Runs: *runs, Parallel: *parallel,
		Keep: func(c scenarios.Cell) bool {
			return measured(c) && (*onlyAlgs == "" || slices.Contains(strings.Split(*onlyAlgs, ","), c.Algorithm))
		}}
	for _, s := range scenarios.All() {
		if *only == "" || slices.Contains(strings.Split(*only, ","), s.Name) {
			m.Scenarios = append(m.Scenarios, s)
		}
	}
	if d := procclient.ShippedDir(); d != "" {
		if err := procclient.RegisterDir(d); err != nil { // the shipped libraries' clients
			fmt.Fprintln(os.Stderr, "reproduce:", err)
			os.Exit(254)
		}
	}
	cells, algs, err := runner.SelftestCells(m.Scenarios)
	if err == nil && *onlyAlgs != "" {
		cells, algs, err = withOthers(m.Scenarios, cells, algs, strings.Split(*onlyAlgs, ","))
	}
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
		if runner.BadInput(err) {
			cancel(err)
		}
		if err != nil || rc.Result == nil {
			r.misses = append(r.misses, fmt.Sprintf("run %d: %v", rc.Run, err))
			return
		}
		res := rc.Result
		if res.Evidence == "ok" {
			r.evidenceOK++
		}
		if _, match := reports.Judge(&rc); match {
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
	if err := context.Cause(ctx); runner.BadInput(err) {
		fmt.Fprintf(os.Stderr, "reproduce: %v (nothing written to %s)\n", err, *bench)
		os.Exit(254)
	}

	var lines []line
	for _, r := range rows {
		lines = append(lines, r.line())
	}
	var b strings.Builder
	header := fmt.Sprintf("`go run ./internal/reproduce --runs %d` (make reproduce): each cell %d times, fresh servers and seed each run; %s in all.\n"+
		"Reproduced = runs whose verdict matched the catalogue's expectation (for a mutant: runs that caught it). Evidence ok = runs that showed they could have failed (docs/design.md#evidence: every planned fault fired, writes and contended grants in the danger window; an unsafe or stuck run's violation is its own evidence). TTD = time from run start to the first violating operation (stuck: to when the stall reached the limit).\n",
		*runs, *runs, time.Since(start).Round(time.Second))
	if *merge {
		old, oldHeader, err := readTable(*bench)
		if err != nil {
			fmt.Fprintln(os.Stderr, "reproduce: --merge:", err)
			os.Exit(254)
		}
		what, args := "the cells of "+*only, "--scenarios "+*only
		if *only == "" {
			what, args = "the cells of every scenario", ""
		}
		if *onlyAlgs != "" {
			what, args = what+" × "+*onlyAlgs, strings.TrimSpace(args+" --algorithms "+*onlyAlgs)
		}
		cmd := fmt.Sprintf("`go run ./internal/reproduce --merge %s --runs %d`", args, *runs)
		header = supersede(oldHeader, cmd) + fmt.Sprintf("Re-measured on %s, %d runs each: %s (%s, %s); the other rows are from the runs above.\n",
			time.Now().UTC().Format("2006-01-02"), *runs, what, cmd, time.Since(start).Round(time.Second))
		lines = mergeLines(old, lines, func(l line) bool {
			s, err := scenarios.Lookup(l.scenario)
			if err != nil {
				return false
			}
			c, err := s.Cell(l.algorithm)
			return err == nil && measured(c)
		})
	}
	b.WriteString(header + "\n")
	writeRows(&b, lines)
	fmt.Print(b.String())
	if err := benchmd.Update(*bench, "Detection speed", b.String()); err != nil {
		fmt.Fprintln(os.Stderr, "reproduce:", err)
		os.Exit(1)
	}
}

// rewriteTable writes the table of path again, its rows as they are and its targets summed anew
// (after its parser learned to read what it once dropped).
func rewriteTable(path string) error {
	lines, header, err := readTable(path)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(header + "\n")
	writeRows(&b, lines)
	return benchmd.Update(path, "Detection speed", b.String())
}

// writeRows writes the table's rows and the targets they meet.
func writeRows(b *strings.Builder, lines []line) {
	b.WriteString("| cell | expected | reproduced | evidence ok | median TTD | max TTD | misses |\n|---|---|---|---|---|---|---|\n")
	for _, l := range lines {
		b.WriteString(l.String())
	}
	writeTargets(b, lines)
}

// line is one row of the table.
type line struct {
	algorithm, scenario, expected string
	matched, runs, evidenceOK     int
	median, max                   float64 // ms; -1 when no run had a TTD
	misses                        string
}

func (r *row) line() line {
	l := line{algorithm: r.cell.Algorithm, scenario: r.cell.Scenario, expected: r.cell.Expected,
		matched: r.matched, runs: r.runs, evidenceOK: r.evidenceOK, median: -1, max: -1, misses: strings.Join(r.misses, "; ")}
	if len(r.ttds) > 0 {
		slices.Sort(r.ttds)
		l.median, l.max = r.ttds[len(r.ttds)/2], r.ttds[len(r.ttds)-1]
	}
	if l.misses == "" {
		l.misses = "—"
	}
	return l
}

func (l line) String() string {
	// A miss may quote a client's stderr, pipes and all: escaped, so the row keeps its columns
	// (and readTable, which splits on " | ", reads it back as written).
	misses := strings.ReplaceAll(strings.ReplaceAll(l.misses, `\|`, "|"), "|", `\|`)
	return fmt.Sprintf("| %s × %s | %s | %d/%d | %d/%d | %s | %s | %s |\n", l.algorithm, l.scenario, l.expected,
		l.matched, l.runs, l.evidenceOK, l.runs, fmtMs(l.median), fmtMs(l.max), misses)
}

// readTable parses the "Detection speed" table of the markdown file at path, with the text above
// it (less its "Measured" stamp, which benchmd writes anew).
func readTable(path string) ([]line, string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	_, sec, ok := strings.Cut(string(raw), "## Detection speed\n")
	if !ok {
		return nil, "", fmt.Errorf("%s has no Detection speed section to merge into: run without --merge", path)
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	var header strings.Builder
	var out []line
	inTable := false
	for _, ln := range strings.Split(sec, "\n") {
		switch {
		case strings.HasPrefix(ln, "| cell |") || strings.HasPrefix(ln, "|---"):
			inTable = true
		case inTable && strings.HasPrefix(ln, "| "):
			f := strings.Split(strings.Trim(ln, "| "), " | ")
			if len(f) != 7 {
				return nil, "", fmt.Errorf("%s: a row of the table has %d columns, want 7: %q", path, len(f), ln)
			}
			alg, scen, _ := strings.Cut(f[0], " × ")
			l := line{algorithm: alg, scenario: scen, expected: f[1], median: parseMs(f[4]), max: parseMs(f[5]), misses: f[6]}
			fmt.Sscanf(f[2], "%d/%d", &l.matched, &l.runs)
			fmt.Sscanf(f[3], "%d/", &l.evidenceOK)
			out = append(out, l)
		case inTable:
			// the table ended; what follows (the targets) is written anew
			return out, header.String(), nil
		case strings.HasPrefix(ln, "_Measured ") || ln == "" || strings.HasPrefix(ln, "**Targets**"):
		default:
			header.WriteString(ln + "\n")
		}
	}
	return out, header.String(), nil
}

// parseMs reads back a TTD the table shows (fmtMs: history.FormatMs's "420 ms", "2.64 s",
// "80.5 µs", "12 ns", "2m03.0s"), in ms; -1 for "—" or anything else. (It read "ms" alone once,
// so every merge dropped the TTDs of a second or more.)
func parseMs(s string) float64 {
	var m int
	var v float64
	if _, err := fmt.Sscanf(s, "%dm%fs", &m, &v); err == nil && strings.HasSuffix(s, "s") && !strings.Contains(s, " ") {
		return float64(m)*60e3 + v*1e3
	}
	num, unit, ok := strings.Cut(s, " ")
	if !ok {
		return -1
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return -1
	}
	scale, ok := map[string]float64{"s": 1e3, "ms": 1, "µs": 1e-3, "ns": 1e-6}[unit]
	if !ok {
		return -1
	}
	return v * scale
}

// measured reports whether the table has a row for cell c: it applies and has an expectation.
func measured(c scenarios.Cell) bool { return c.NA == "" && c.Expected != "" }

// withOthers adds the measured cells of the asked algorithms the selftest does not run (etcd,
// redsync, the Go lock libraries, the shipped process clients): their rows in the table are the
// 20/20 figures behind README's tables of them.
func withOthers(ss []scenarios.Scenario, cells []scenarios.Cell, algs, asked []string) ([]scenarios.Cell, []string, error) {
	for _, a := range asked {
		a = strings.TrimSpace(a)
		if slices.Contains(algs, a) {
			continue
		}
		if _, err := algorithms.Lookup(a); err != nil {
			return nil, nil, fmt.Errorf("--algorithms: %w", err)
		}
		algs = append(algs, a)
		for _, s := range ss {
			c, err := s.Cell(a)
			if err != nil {
				return nil, nil, err
			}
			if measured(c) {
				cells = append(cells, c)
			}
		}
	}
	return cells, algs, nil
}

// supersede drops the header's lines about an earlier re-run of the same command: its rows are
// all replaced.
func supersede(header, cmd string) string {
	var b strings.Builder
	for _, ln := range strings.SplitAfter(header, "\n") {
		if !strings.Contains(ln, "("+cmd+",") {
			b.WriteString(ln)
		}
	}
	return b.String()
}

// mergeLines replaces the rows of old that were re-run, in place, drops the old rows of cells
// the catalogue no longer has (current false), and appends new cells.
func mergeLines(old, fresh []line, current func(line) bool) []line {
	byCell := map[string]line{}
	for _, l := range fresh {
		byCell[l.algorithm+" × "+l.scenario] = l
	}
	var out []line
	for _, l := range old {
		k := l.algorithm + " × " + l.scenario
		if n, ok := byCell[k]; ok {
			l = n
			delete(byCell, k)
		} else if !current(l) {
			continue
		}
		out = append(out, l)
	}
	for _, l := range fresh {
		if _, ok := byCell[l.algorithm+" × "+l.scenario]; ok {
			out = append(out, l)
		}
	}
	return out
}

// writeTargets sums the table up against the targets of docs/design.md#evidence and docs/design.md#mutants: every mutant caught in
// ≥ 19/20 of its runs in each scenario that must catch it, with a median TTD ≤ 3 s in each; every
// real cell reproduced with evidence ok in ≥ 19/20 of its runs.
func writeTargets(b *strings.Builder, lines []line) {
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
	for _, r := range lines {
		need := (r.runs*19 + 19) / 20 // 19/20, rounded up
		info, err := algorithms.Lookup(r.algorithm)
		if err != nil || info.Mutant == "" {
			realCells++
			if r.evidenceOK >= need && r.matched >= need {
				realOK++
			} else {
				realMisses = append(realMisses, fmt.Sprintf("%s × %s (%d/%d, evidence %d/%d)",
					r.algorithm, r.scenario, r.matched, r.runs, r.evidenceOK, r.runs))
			}
			continue
		}
		m := mutants[r.algorithm]
		if m == nil {
			m = &mutant{caught: r.matched, runs: r.runs, ok: true}
			mutants[r.algorithm] = m
			names = append(names, r.algorithm)
		}
		m.cells = append(m.cells, fmt.Sprintf("%s %d/%d, %s", r.scenario, r.matched, r.runs, fmtMs(r.median)))
		if r.matched < m.caught {
			m.caught, m.runs = r.matched, r.runs
		}
		m.worstTTD = max(m.worstTTD, r.median)
		if r.matched < need || r.median < 0 || r.median > 3000 {
			m.ok = false
		}
	}
	slices.Sort(names)
	fmt.Fprintf(b, "\n**Targets** (docs/design.md#evidence and docs/design.md#mutants, each cell ≥ 19/20 of its runs): real cells reproduced with evidence ok: %d of %d", realOK, realCells)
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
	return history.FormatMs(v)
}

func verdictOf(rc reports.Cell) string {
	if rc.Result == nil {
		return "error: " + rc.Err
	}
	return string(rc.Result.Verdict)
}
