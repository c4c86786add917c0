package bench_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/bench"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// BenchmarkMatrixParallel runs the default matrix (`lockchaos matrix`, local backend) at each
// --parallel level of BENCH_MATRIX_PARALLEL (default 2,4,8), each with each number of CPU-bound
// loops of BENCH_MATRIX_LOADS running beside it (default 0,2: a developer's build or a CI
// neighbour), BENCH_MATRIX_REPEATS times each (default 5), and writes "Matrix parallelism": wall
// time, and in how many repeats every cell matched the catalogue with evidence ok. The reference
// is --parallel 2 with no loop (make run's default before this measure), in the same run. A level
// is kept only when all its repeats are clean.
func BenchmarkMatrixParallel(b *testing.B) {
	levels := envInts(b, "BENCH_MATRIX_PARALLEL", []int{2, 4, 8}, 1)
	loads := envInts(b, "BENCH_MATRIX_LOADS", []int{0, 2}, 0)
	reps := envInts(b, "BENCH_MATRIX_REPEATS", []int{bench.Repeats(5)}, 1)[0]
	bin := testenv.BuildCLI(b)
	load := bench.LoadAvg()
	type level struct {
		p      int
		loops  int
		walls  []time.Duration
		clean  int
		issues []string
	}
	// An unclean matrix's runs are kept for their histories and reports; the clean ones go.
	keep, err := filepath.Abs(filepath.Join("..", "..", "out", "bench-matrix"))
	if err != nil {
		b.Fatal(err)
	}
	var rows []level
	// Repeats interleave the levels, so a slow spell of the machine does not fall on one level.
	for _, p := range levels {
		for _, n := range loads {
			rows = append(rows, level{p: p, loops: n})
		}
	}
	for rep := range reps {
		for i := range rows {
			l := &rows[i]
			out := filepath.Join(keep, fmt.Sprintf("p%d-l%d-r%d", l.p, l.loops, rep+1))
			_ = os.RemoveAll(out) // a previous bench's
			cmd := exec.Command(bin, "matrix", "--parallel", strconv.Itoa(l.p), "--out", out, "--quiet")
			stop := spin(l.loops)
			t0 := time.Now()
			o, err := cmd.CombinedOutput()
			l.walls = append(l.walls, time.Since(t0))
			stop()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				b.Fatalf("matrix: %v", err)
			}
			issues := matrixIssues(filepath.Join(out, "results.json"), o)
			if len(issues) == 0 {
				l.clean++
			}
			for _, is := range issues {
				l.issues = append(l.issues, fmt.Sprintf("repeat %d: %s", rep+1, is))
			}
			b.Logf("--parallel %d, %d loops beside, repeat %d: %v, %d issues", l.p, l.loops, rep+1, l.walls[len(l.walls)-1].Round(time.Second), len(issues))
			if len(issues) == 0 {
				_ = os.RemoveAll(out)
			} else {
				b.Logf("kept: %s", out)
			}
		}
	}
	var s strings.Builder
	fmt.Fprintf(&s, "`go test -run '^$' -bench BenchmarkMatrixParallel -benchtime 1x -timeout 90m ./internal/bench/` — "+
		"`lockchaos matrix --parallel P --quiet` over the default catalogue, local backend, %d repeats of each level (interleaved), "+
		"with 0 or more CPU-bound loops running beside it (as many as the column says, one busy goroutine each). "+
		"Clean = every cell's verdict matched the catalogue and every evidence was ok (an unclean matrix's runs are kept in out/bench-matrix/pP-lL-rR). Reference: --parallel %d with %d loops in the same run. Load average before: %s, after: %s.\n\n",
		reps, rows[0].p, rows[0].loops, load, bench.LoadAvg())
	s.WriteString("| --parallel | loops beside | wall (median) | min | max | speed-up | clean repeats | what was not |\n|---:|---:|---:|---:|---:|---:|---|---|\n")
	ref := bench.MedianDuration(rows[0].walls)
	best := map[int]int{} // by loops beside
	for _, l := range rows {
		med := bench.MedianDuration(l.walls)
		issues := "—"
		if len(l.issues) > 0 {
			issues = oneLine(strings.Join(l.issues, "; "))
		}
		fmt.Fprintf(&s, "| %d | %d | %v | %v | %v | %.2f× | %d/%d | %s |\n", l.p, l.loops, med.Round(time.Second),
			slices.Min(l.walls).Round(time.Second), slices.Max(l.walls).Round(time.Second), float64(ref)/float64(med), l.clean, reps, issues)
		if l.clean == reps {
			best[l.loops] = max(best[l.loops], l.p)
		}
	}
	s.WriteString("\n")
	for _, n := range loads {
		if best[n] > 0 {
			fmt.Fprintf(&s, "Highest level clean in every repeat with %d loops beside: **--parallel %d**.\n", n, best[n])
		} else {
			fmt.Fprintf(&s, "With %d loops beside, no level was clean in every repeat.\n", n)
		}
	}
	update(b, "Matrix parallelism", s.String())
}

// spin keeps n CPU-bound loops running until the returned stop is called.
func spin(n int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := uint64(1); ; x = x*6364136223846793005 + 1442695040888963407 {
				select {
				case <-done:
					return
				default:
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// matrixIssues lists the cells of a matrix's results.json that did not match the catalogue or
// whose evidence was not ok (n/a cells have neither).
func matrixIssues(path string, output []byte) []string {
	var doc struct {
		Results []struct {
			Scenario, Algorithm, Verdict, Expected, Error string
			Matches                                       *bool `json:"matches_expectation"`
			Result                                        *struct {
				Evidence string `json:"evidence"`
			} `json:"result"`
		} `json:"results"`
	}
	raw, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(raw, &doc) != nil {
		return []string{"no results.json: " + oneLine(lastLine(output))}
	}
	var out []string
	for _, r := range doc.Results {
		switch {
		case r.Error != "":
			out = append(out, fmt.Sprintf("%s × %s: error %s", r.Algorithm, r.Scenario, oneLine(r.Error)))
		case r.Matches != nil && !*r.Matches:
			out = append(out, fmt.Sprintf("%s × %s: %s, expected %s", r.Algorithm, r.Scenario, r.Verdict, r.Expected))
		case r.Result != nil && r.Result.Evidence != "ok":
			out = append(out, fmt.Sprintf("%s × %s: evidence %s", r.Algorithm, r.Scenario, r.Result.Evidence))
		}
	}
	return out
}
