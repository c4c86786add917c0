package main

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

const section = `# Benchmarks

## Detection speed

_Measured 2026-11-23 on AMD EPYC, 2 CPUs, linux/amd64, go1.26.8._

` + "`go run ./internal/reproduce --runs 3`" + ` (make reproduce): each cell 3 times.
Reproduced = runs whose verdict matched.

| cell | expected | reproduced | evidence ok | median TTD | max TTD | misses |
|---|---|---|---|---|---|---|
| setnx × baseline | safe | 3/3 | 3/3 | — | — | — |
| getset × slow-release | unsafe-service | 2/3 | 3/3 | 962 ms | 965 ms | run 1: safe |
| token-plain-del × slow-release | unsafe-service | 3/3 | 3/3 | 1.42 s | 1.43 s | — |

**Targets** (old): whatever.

## Other

kept
`

// --merge keeps the rows it did not re-run, replaces the others in place, and sums up the whole.
func TestMergeTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := os.WriteFile(path, []byte(section), 0o644); err != nil {
		t.Fatal(err)
	}
	old, header, err := readTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != 3 || old[1].matched != 2 || old[1].runs != 3 || old[1].evidenceOK != 3 || old[1].median != 962 || old[0].median != -1 || old[2].median != 1420 || old[2].max != 1430 {
		t.Fatalf("parsed %+v", old)
	}
	if !strings.Contains(header, "each cell 3 times") || strings.Contains(header, "_Measured") || strings.Contains(header, "Targets") {
		t.Fatalf("header %q", header)
	}
	fresh := []line{{algorithm: "getset", scenario: "slow-release", expected: "unsafe-service", matched: 20, runs: 20, evidenceOK: 20, median: 1900, max: 1950, misses: "—"}}
	h := "Intro.\nRe-measured on 2026-11-23, 20 runs each: the cells of a (`go run ./internal/reproduce --merge --scenarios a --runs 20`, 1m).\n" +
		"Re-measured on 2026-11-23, 20 runs each: the cells of ab (`go run ./internal/reproduce --merge --scenarios ab --runs 20`, 1m).\n"
	if got := supersede(h, "`go run ./internal/reproduce --merge --scenarios a --runs 20`"); strings.Contains(got, "cells of a ") || !strings.Contains(got, "cells of ab ") {
		t.Fatalf("superseded header:\n%s", got)
	}
	if got := mergeLines(old, fresh, func(l line) bool { return l.algorithm != "setnx" }); len(got) != 2 || got[0].algorithm != "getset" {
		t.Fatalf("merged without the cell the catalogue dropped: %+v", got)
	}
	got := mergeLines(old, fresh, func(line) bool { return true })
	if len(got) != 3 || got[1].matched != 20 || got[0].algorithm != "setnx" || got[2].algorithm != "token-plain-del" {
		t.Fatalf("merged %+v", got)
	}
	var b strings.Builder
	writeTargets(&b, got)
	if !strings.Contains(b.String(), "real cells reproduced with evidence ok: 2 of 2") ||
		!strings.Contains(b.String(), "| token-plain-del | 3/3 | 1.42 s |") {
		t.Fatalf("targets:\n%s", b.String())
	}
}

// --rewrite writes the rows as they were, sums the targets anew and leaves the rest of the file.
func TestRewriteTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := os.WriteFile(path, []byte(section), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rewriteTable(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(raw)
	for _, want := range []string{
		"| token-plain-del × slow-release | unsafe-service | 3/3 | 3/3 | 1.42 s | 1.43 s | — |",
		"| getset × slow-release | unsafe-service | 2/3 | 3/3 | 962 ms | 965 ms | run 1: safe |",
		"real cells reproduced with evidence ok: 1 of 2", "## Other\n\nkept",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rewritten file lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "(old): whatever") {
		t.Errorf("the old targets line survived:\n%s", got)
	}
}

// A miss that quotes pipes (a client's stderr) keeps the row's seven columns, through a merge too.
func TestMissWithPipes(t *testing.T) {
	l := line{algorithm: "curator", scenario: "node-kill", expected: "safe", matched: 19, runs: 20, evidenceOK: 19,
		median: -1, max: -1, misses: "run 19: client 4 did not answer; last stderr: a | b | c"}
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	for range 2 { // written, read back, written again
		doc := "## Detection speed\n\nIntro.\n\n| cell | expected | reproduced | evidence ok | median TTD | max TTD | misses |\n|---|---|---|---|---|---|---|\n" + l.String()
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		got, _, err := readTable(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].matched != 19 || !strings.Contains(got[0].misses, "a \\| b") {
			t.Fatalf("read back %+v", got)
		}
		l = got[0]
	}
	if s := l.String(); strings.Count(s, " | ") != 6 || strings.Contains(s, `\\|`) {
		t.Errorf("row %q: want 7 columns and each pipe escaped once", s)
	}
}

// A TTD the table shows reads back as the value it shows, in every unit fmtMs writes.
func TestTTDReadsBack(t *testing.T) {
	for _, ms := range []float64{0.000012, 0.0805, 1.71, 50, 420, 999, 1000, 2640, 59900, 123000} {
		shown := fmtMs(ms)
		got := parseMs(shown)
		if got < 0 || math.Abs(got-ms) > 0.005*ms {
			t.Errorf("fmtMs(%v) = %q, read back as %v", ms, shown, got)
		}
	}
	for _, s := range []string{"—", "", "fast", "12 parsecs"} {
		if got := parseMs(s); got != -1 {
			t.Errorf("parseMs(%q) = %v, want -1", s, got)
		}
	}
}

// TestWithOthers: an algorithm the selftest does not run adds its measured cells (and only those),
// one the selftest runs adds nothing, and an unknown name is an error naming it.
func TestWithOthers(t *testing.T) {
	ss := scenarios.All()
	cells, algs, err := runner.SelftestCells(ss)
	if err != nil {
		t.Fatal(err)
	}
	n := len(cells)
	more, algs2, err := withOthers(ss, cells, algs, []string{"bsm-redislock", "token"})
	if err != nil {
		t.Fatal(err)
	}
	added := more[n:]
	if len(added) == 0 || len(algs2) != len(algs)+1 {
		t.Fatalf("bsm-redislock and token added %d cells and %d algorithms, want bsm-redislock's cells and one algorithm", len(added), len(algs2)-len(algs))
	}
	for _, c := range added {
		if c.Algorithm != "bsm-redislock" || !measured(c) {
			t.Errorf("added %s × %s (expected %q, n/a %q): want only bsm-redislock's measured cells", c.Algorithm, c.Scenario, c.Expected, c.NA)
		}
	}
	if _, _, err := withOthers(ss, cells, algs, []string{"no-such-lock"}); err == nil || !strings.Contains(err.Error(), "no-such-lock") {
		t.Errorf("an unknown algorithm: %v, want an error naming it", err)
	}
}

// TestMain runs main() instead of the tests when LOCKCHAOS_REPRODUCE_MAIN is set: the tests run
// the command as a user does, in a process of its own.
func TestMain(m *testing.M) {
	if os.Getenv("LOCKCHAOS_REPRODUCE_MAIN") == "1" {
		os.Args = append([]string{"reproduce"}, strings.Fields(os.Getenv("LOCKCHAOS_REPRODUCE_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A bad input fails every run alike: the first run that meets it ends the reproduction with 254,
// and the table is left as it was (a missing server here: PATH holds no redis-server).
func TestBadInputWritesNothing(t *testing.T) {
	dir := t.TempDir()
	bench := filepath.Join(dir, "BENCHMARKS.md")
	if err := os.WriteFile(bench, []byte(section), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir(), "LOCKCHAOS_REPRODUCE_MAIN=1",
		"LOCKCHAOS_REPRODUCE_ARGS=--runs 5 --scenarios baseline --algorithms setnx --bench "+bench+" --out "+filepath.Join(dir, "out"))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 254 {
		t.Fatalf("exit: %v, want 254; output:\n%s", err, out)
	}
	if got, _ := os.ReadFile(bench); string(got) != section {
		t.Errorf("the table changed:\n%s", got)
	}
	if n := strings.Count(string(out), "setnx × baseline run "); n != 1 {
		t.Errorf("%d runs reported, want 1 (the first bad input ends it); output:\n%s", n, out)
	}
	if !strings.Contains(string(out), "nothing written") {
		t.Errorf("no line saying the table was left alone; output:\n%s", out)
	}
}
