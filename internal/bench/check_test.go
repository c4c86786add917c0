package bench_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/bench"
	"github.com/lockchaos/lockchaos/internal/histgen"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// BenchmarkCheckCommand measures `lockchaos check --write DIR` end to end (read the history,
// check it, write result.json and the reports) on generated histories of a correct lock, 5
// clients contending, as a child process: its wall time and peak RSS. The reference, measured in
// the same run, is reading the same file once (warm page cache) — the floor any check has.
// BENCH_CHECK_OPS lists the sizes (default 1000000,2000000,10000000). It writes "Check at scale".
func BenchmarkCheckCommand(b *testing.B) {
	sizes := envInts(b, "BENCH_CHECK_OPS", []int{1_000_000, 2_000_000, 10_000_000}, 1)
	bin := testenv.BuildCLI(b)
	load := bench.LoadAvg()
	var rows []string
	for _, n := range sizes {
		dir := b.TempDir()
		hist := filepath.Join(dir, "history.jsonl")
		if err := histgen.WriteFile(hist, histgen.Config{Clients: 5, Ops: n, TTL: time.Second, Seed: 1, Noise: true}); err != nil {
			b.Fatal(err)
		}
		st, err := os.Stat(hist)
		if err != nil {
			b.Fatal(err)
		}
		read := readOnce(b, hist) // warms the page cache for the check too
		read = min(read, readOnce(b, hist))
		cmd := exec.Command(bin, "check", "--write", dir)
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		wall := time.Since(t0)
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			b.Fatalf("check: %v\n%s", err, out)
		}
		rss := int64(0)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss << 10 // kB on Linux
		}
		verdict, ops, report := checkedResult(b, dir)
		goal := "—"
		if n >= 10_000_000 {
			goal = "**not met**"
			if wall < 20*time.Second && rss < 1<<30 {
				goal = "met"
			}
		}
		rows = append(rows, fmt.Sprintf("| %d | %.0f MB | %s | %s | %.1f× | %.0f MB | %s | %s | %s |",
			ops, float64(st.Size())/1e6, read.Round(time.Millisecond), wall.Round(10*time.Millisecond),
			float64(wall)/float64(read), float64(rss)/(1<<20), verdict, report, goal))
		b.Logf("%d ops: %v, %d MB RSS, %s", ops, wall, rss>>20, verdict)
		_ = os.RemoveAll(dir)
	}
	var body strings.Builder
	fmt.Fprintf(&body, "`go test -run '^$' -bench BenchmarkCheckCommand -benchtime 1x -timeout 60m ./internal/bench/` — "+
		"`lockchaos check --write DIR` as a child process on a generated history of a correct lock (5 clients contending, TTL 1s, "+
		"2%% failed or unknown acquires; internal/histgen), end to end: read, check, write result.json, report.html and the two porcupine pages. "+
		"Reference: reading the file once, warm page cache, in the same run. Peak RSS = the child's maxrss. Goal (issue 19): 10M operations in < 20 s and < 1 GiB on these 2 cores.\n\n"+
		"Load average before: %s.\n\n", load)
	body.WriteString("| operations | file | read once (ref) | check end to end | ratio | peak RSS | verdict | report.html | goal |\n|---:|---:|---:|---:|---:|---:|---|---:|---|\n")
	body.WriteString(strings.Join(rows, "\n") + "\n")
	update(b, "Check at scale", body.String())
}

func readOnce(b *testing.B, path string) time.Duration {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	t0 := time.Now()
	if _, err := io.Copy(io.Discard, f); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// envInts reads a comma-separated list of integers of at least least from env name, else def.
func envInts(b *testing.B, name string, def []int, least int) []int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < least {
			b.Fatalf("%s=%q: want a comma-separated list of integers ≥ %d", name, s, least)
		}
		out = append(out, n)
	}
	return out
}

// checkedResult reads what the check wrote: the verdict, the operations and report.html's size.
func checkedResult(b *testing.B, dir string) (string, int, string) {
	raw, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		b.Fatalf("check wrote no result.json: %v", err)
	}
	var r struct {
		Verdict    string `json:"verdict"`
		Operations int    `json:"operations"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "report.html"))
	if err != nil {
		b.Fatalf("check wrote no report.html: %v", err)
	}
	return r.Verdict, r.Operations, fmt.Sprintf("%.0f KB", float64(st.Size())/1e3)
}
