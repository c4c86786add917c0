package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	_ "github.com/lockchaos/lockchaos/cluster/docker" // the start times on the docker backend
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/internal/bench"
	"github.com/lockchaos/lockchaos/internal/benchmd"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// helperEnv makes TestLongRunHelper run: the benchmarks below re-run this test binary as a child,
// so the peak RSS and heap they report belong to one harness run and nothing else.
const helperEnv = "LOCKCHAOS_BENCH_LONG_RUN"

// missingMark tells the parent that the child found no servers, so the benchmark skips.
const missingMark = "SKIP-MISSING-SERVERS"

// longRun is what the helper is asked to do, and longResult what it reports.
type longRun struct {
	Duration time.Duration
	Every    time.Duration // sampling interval
	Dir      string
	Out      string // the helper writes its longResult here as JSON
}

type sample struct {
	At         time.Duration
	LiveHeap   uint64 // live heap after the last GC
	HeapInUse  uint64 // heap objects now
	Goroutines uint64
	RSS        uint64
}

type longResult struct {
	Samples  []sample
	PeakRSS  uint64
	Elapsed  time.Duration
	Releases int // history lines: release invocations (critical sections)
}

// soakConfig is the long run: token on redis-single, the default workload (5 clients, hold 10ms,
// think up to 5ms), proxies on, and client 1 cut off from Redis for 1s every 10s for the whole
// run, so the proxies, the nemesis and the clients' reconnects are exercised all along.
func soakConfig(d time.Duration, dir string) harness.Config {
	return harness.Config{Algorithm: "token", Scenario: "soak", Duration: d, Tail: time.Second, Seed: 1, Dir: dir,
		Faults: []faults.Spec{{Kind: "partition", At: faults.Duration(5 * time.Second),
			Every: faults.Duration(10 * time.Second), Times: -1, For: faults.Fixed(time.Second), Clients: "1"}}}
}

const soakDescription = "token on redis-single, 5 clients, hold 10ms, think ≤ 5ms, TTL 1s, proxies on, client 1 " +
	"partitioned from Redis for 1s every 10s"

// TestLongRunHelper is not a test: it is the child process of BenchmarkRunCost and BenchmarkSoak
// and skips unless they start it.
func TestLongRunHelper(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("helper of BenchmarkRunCost and BenchmarkSoak")
	}
	var lr longRun
	if err := json.Unmarshal([]byte(spec), &lr); err != nil {
		t.Fatal(err)
	}
	ms := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/sched/goroutines:goroutines"}}
	var res longResult
	start := time.Now()
	take := func() {
		metrics.Read(ms)
		rss, _ := bench.RSS()
		res.Samples = append(res.Samples, sample{At: time.Since(start), LiveHeap: ms[0].Value.Uint64(),
			HeapInUse: ms[1].Value.Uint64(), Goroutines: ms[2].Value.Uint64(), RSS: rss})
	}
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tk := time.NewTicker(lr.Every)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				take()
			}
		}
	}()
	r, err := harness.Run(context.Background(), soakConfig(lr.Duration, lr.Dir))
	close(done)
	<-sampled
	if errors.Is(err, cluster.ErrMissingBinary) {
		t.Fatalf("%s: %v", missingMark, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	res.Elapsed = time.Since(start)
	res.PeakRSS, _ = bench.PeakRSS()
	b, err := os.ReadFile(r.HistoryPath)
	if err != nil {
		t.Fatal(err)
	}
	res.Releases = strings.Count(string(b), `"op":"release"`)
	out, _ := json.Marshal(res)
	if err := os.WriteFile(lr.Out, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runLong runs the long run in a child process and returns what it measured.
func runLong(b *testing.B, d, every time.Duration) longResult {
	b.Helper()
	dir := b.TempDir()
	lr := longRun{Duration: d, Every: every, Dir: filepath.Join(dir, "run"), Out: filepath.Join(dir, "result.json")}
	spec, _ := json.Marshal(lr)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLongRunHelper$", "-test.count", "1", "-test.timeout", (d + 5*time.Minute).String())
	cmd.Env = append(os.Environ(), helperEnv+"="+string(spec))
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), missingMark) {
			b.Skipf("skip: long run: %s", lastLine(out))
		}
		b.Fatalf("long run: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(lr.Out)
	if err != nil {
		b.Fatalf("long run wrote no result (%v): %s", err, lastLine(out))
	}
	var res longResult
	if err := json.Unmarshal(raw, &res); err != nil {
		b.Fatal(err)
	}
	return res
}

func lastLine(out []byte) string {
	l := strings.Split(strings.TrimSpace(string(out)), "\n")
	return l[len(l)-1]
}

func mb(v uint64) string { return fmt.Sprintf("%.1f MB", float64(v)/(1<<20)) }

func update(b *testing.B, section, body string) {
	b.Helper()
	path, err := bench.File()
	if err != nil {
		b.Fatal(err)
	}
	if err := benchmd.Update(path, section, body); err != nil {
		b.Fatal(err)
	}
}

type startRow struct {
	backend, topology string
	times             []time.Duration
	note              string
}

// startTimes starts and closes each topology on backend reps times.
func startTimes(b *testing.B, backend string, topologies []string, reps int) []startRow {
	var rows []startRow
	for _, topo := range topologies {
		row := startRow{backend: backend, topology: topo}
		for range reps {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			t0 := time.Now()
			cl, err := cluster.Start(ctx, cluster.Spec{Topology: topo, Backend: backend, Clients: 5, Proxies: true,
				Dir: b.TempDir(), RedisImage: "lockchaos/redis", ZooKeeperImage: "lockchaos/zookeeper", PostgresImage: "lockchaos/postgres", MariaDBImage: "lockchaos/mariadb", EtcdImage: "lockchaos/etcd"})
			d := time.Since(t0)
			if err != nil {
				cancel()
				row.note = err.Error()
				break
			}
			row.times = append(row.times, d)
			_ = cl.Close()
			cancel()
		}
		rows = append(rows, row)
	}
	return rows
}

// BenchmarkRunCost measures what a run costs: cluster start per topology (local and docker
// backends), the wall time of `lockchaos matrix --parallel 2` over the default catalogue, and the
// harness's peak RSS over a long run; it writes "Cost of a run".
func BenchmarkRunCost(b *testing.B) {
	long, err := bench.EnvDuration("BENCH_LONG_RUN", 2*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	reps := bench.Repeats(3)
	var s strings.Builder
	for range b.N {
		s.Reset()
		loadStart := bench.LoadAvg()
		var rows []startRow
		local := cluster.Topologies
		rows = append(rows, startTimes(b, cluster.Local, local, reps)...)
		if _, err := exec.LookPath("docker"); err == nil {
			var docker []string
			for _, t := range cluster.Topologies {
				if cluster.OnDocker(t) {
					docker = append(docker, t)
				}
			}
			rows = append(rows, startTimes(b, cluster.Docker, docker, reps)...)
		} else {
			rows = append(rows, startRow{backend: cluster.Docker, topology: "all", note: "docker not installed"})
		}
		fmt.Fprintf(&s, "`go test -run '^$' -bench BenchmarkRunCost -benchtime 1x -timeout 30m ./internal/bench/` "+
			"(env BENCH_LONG_RUN=10m for a 10-minute long run; default %v).\n\n", 2*time.Minute)
		fmt.Fprintf(&s, "**Cluster start** — `cluster.Start` until every server answers, 5 clients, proxies on; median of %d "+
			"(docker: the images `make images` builds, lockchaos/redis, lockchaos/zookeeper, lockchaos/etcd, lockchaos/mariadb, lockchaos/postgres and lockchaos/pgbouncer). Load average before: %s.\n\n", reps, loadStart)
		s.WriteString("| backend | topology | start (median) | min | max | note |\n|---|---|---:|---:|---:|---|\n")
		for _, r := range rows {
			if len(r.times) == 0 {
				fmt.Fprintf(&s, "| %s | %s | – | – | – | %s |\n", r.backend, r.topology, oneLine(r.note))
				continue
			}
			lo, hi := r.times[0], r.times[0]
			for _, t := range r.times {
				lo, hi = min(lo, t), max(hi, t)
			}
			fmt.Fprintf(&s, "| %s | %s | %v | %v | %v | %s |\n", r.backend, r.topology,
				bench.MedianDuration(r.times).Round(time.Millisecond), lo.Round(time.Millisecond), hi.Round(time.Millisecond), oneLine(r.note))
		}

		// The matrix, once: it is minutes long.
		loadMatrix := bench.LoadAvg()
		matrix, verdict := runMatrix(b)
		fmt.Fprintf(&s, "\n**Matrix** — `lockchaos matrix --parallel 2` over the default catalogue, local backend, run once: "+
			"%s (%s). Load average before: %s, after: %s.\n", matrix, verdict, loadMatrix, bench.LoadAvg())

		loadLong := bench.LoadAvg()
		res := runLong(b, long, 5*time.Second)
		fmt.Fprintf(&s, "\n**Long run** — one %v harness run (%s) in a child process, no check: "+
			"peak RSS (VmHWM) **%s**; RSS at the end %s; %d critical sections. Load average before: %s, after: %s.\n",
			long, soakDescription, mb(res.PeakRSS), mb(res.Samples[len(res.Samples)-1].RSS), res.Releases, loadLong, bench.LoadAvg())
	}
	update(b, "Cost of a run", s.String())
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// runMatrix builds the CLI and times one matrix run. It returns the wall time and how it ended.
func runMatrix(b *testing.B) (string, string) {
	b.Helper()
	if os.Getenv("BENCH_MATRIX") == "0" {
		return "not run", "BENCH_MATRIX=0"
	}
	bin := testenv.BuildCLI(b)
	out := filepath.Join(b.TempDir(), "reports")
	cmd := exec.Command(bin, "matrix", "--parallel", "2", "--out", out, "--quiet")
	t0 := time.Now()
	o, err := cmd.CombinedOutput()
	wall := time.Since(t0).Round(100 * time.Millisecond)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		b.Fatalf("matrix: %v", err)
	}
	return wall.String(), matrixSummary(filepath.Join(out, "results.json"), err, o)
}

// matrixSummary says how the matrix ended: its exit and, from results.json, the cells that did not
// match their expectation.
func matrixSummary(path string, err error, output []byte) string {
	exit := "exit 0"
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = fmt.Sprintf("exit %d", ee.ExitCode())
	}
	var doc struct {
		Summary struct {
			Cells, Matched, Mismatched int
		} `json:"summary"`
		Results []struct {
			Scenario, Algorithm, Verdict, Expected string
			Matches                                *bool `json:"matches_expectation"`
		} `json:"results"`
	}
	raw, rerr := os.ReadFile(path)
	if rerr != nil || json.Unmarshal(raw, &doc) != nil {
		return exit + ": " + oneLine(lastLine(output))
	}
	msg := fmt.Sprintf("%s: %d cells, %d as expected, %d not", exit, doc.Summary.Cells, doc.Summary.Matched, doc.Summary.Mismatched)
	var off []string
	for _, r := range doc.Results {
		if r.Matches != nil && !*r.Matches {
			off = append(off, fmt.Sprintf("%s × %s: %s, expected %s", r.Algorithm, r.Scenario, r.Verdict, r.Expected))
		}
	}
	if len(off) > 0 {
		msg += " (" + strings.Join(off, "; ") + ")"
	}
	return msg
}

// BenchmarkSoak runs one long harness run (env SOAK, default 2m) in a child process, sampling the
// live heap, the heap in use, the goroutines and the RSS every 5s, and writes "Soak".
func BenchmarkSoak(b *testing.B) {
	d, err := bench.EnvDuration("SOAK", 2*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	const every = 5 * time.Second
	var s strings.Builder
	for range b.N {
		s.Reset()
		load := bench.LoadAvg()
		res := runLong(b, d, every)
		if len(res.Samples) < 4 {
			b.Fatalf("only %d samples", len(res.Samples))
		}
		fmt.Fprintf(&s, "`SOAK=%v go test -run '^$' -bench BenchmarkSoak -benchtime 1x -timeout 0 ./internal/bench/` — "+
			"one %v harness run (%s) in a child process, sampled every %v; %d critical sections. "+
			"Load average before: %s, after: %s. Flat = the last quarter of the samples is no higher than the first "+
			"quarter (median, +10%% for the heap, +2 for goroutines).\n\n", d, d, soakDescription, every, res.Releases, load, bench.LoadAvg())
		s.WriteString("| measure | start | end | max | first-quarter median | last-quarter median | flat |\n|---|---:|---:|---:|---:|---:|---|\n")
		type col struct {
			name   string
			get    func(sample) uint64
			format func(uint64) string
			slack  func(uint64) uint64
		}
		cols := []col{
			{"live heap (after GC)", func(x sample) uint64 { return x.LiveHeap }, mb, func(v uint64) uint64 { return v / 10 }},
			{"heap in use", func(x sample) uint64 { return x.HeapInUse }, mb, func(v uint64) uint64 { return v / 10 }},
			{"goroutines", func(x sample) uint64 { return x.Goroutines }, func(v uint64) string { return fmt.Sprint(v) }, func(uint64) uint64 { return 2 }},
			{"RSS", func(x sample) uint64 { return x.RSS }, mb, func(v uint64) uint64 { return v / 10 }},
		}
		n := len(res.Samples)
		q := max(n/4, 1)
		for _, c := range cols {
			vals := make([]float64, n)
			var mx uint64
			for i, x := range res.Samples {
				vals[i] = float64(c.get(x))
				mx = max(mx, c.get(x))
			}
			first, last := uint64(bench.Median(vals[:q])), uint64(bench.Median(vals[n-q:]))
			flat := "yes"
			if last > first+c.slack(first) {
				flat = "**no**"
			}
			fmt.Fprintf(&s, "| %s | %s | %s | %s | %s | %s | %s |\n", c.name, c.format(c.get(res.Samples[0])),
				c.format(c.get(res.Samples[n-1])), c.format(mx), c.format(first), c.format(last), flat)
		}
		fmt.Fprintf(&s, "\nPeak RSS (VmHWM) of the run: %s.\n", mb(res.PeakRSS))
	}
	update(b, "Soak", s.String())
}
