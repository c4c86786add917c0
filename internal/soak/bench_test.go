package soak_test

import (
	"encoding/json"
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

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/internal/bench"
	"github.com/lockchaos/lockchaos/internal/benchmd"
	"github.com/lockchaos/lockchaos/internal/soak"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/scenarios"
)

// soakOf maps a catalogue scenario to the soak fault that reaches the same failure unaimed.
var soakOf = map[string]string{
	"client-pause": "client-pause", "partition": "partition", "latency": "slow-grant", "slow-release": "late-release",
	"restart": "restart", "clock-jump": "clock-jump", "clock-skew": "clock-skew", "session-kill": "session-kill",
}

// BenchmarkSoakCommand runs `lockchaos soak` for SOAK_TIME (default 10m) on each of
// SOAK_ALGORITHMS (default the seven seed algorithms), one after the other, as a user runs it,
// samples the process's resident memory every second, and writes BENCHMARKS.md "Soak: lockchaos
// soak": RSS at a tenth, half and the end of the run against the reference taken 10 s in (the
// same run), and what the soak found against the failures the catalogue knows for the algorithm.
// Then it runs token, redlock and zookeeper on one plan (SOAK_COMPARE_TIME, default 2m) for the
// comparison page. `make soak-bench` runs it.
func BenchmarkSoakCommand(b *testing.B) {
	d, err := bench.EnvDuration("SOAK_TIME", 10*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	cmpTime, err := bench.EnvDuration("SOAK_COMPARE_TIME", 2*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	algs := scenarios.Seed
	if s := os.Getenv("SOAK_ALGORITHMS"); s != "" {
		algs = strings.Split(s, ",")
	}
	testenv.Servers(b)
	cli := testenv.BuildCLI(b)
	out := filepath.Join("..", "..", "out", "soak-bench")
	var s strings.Builder
	for range b.N {
		s.Reset()
		fmt.Fprintf(&s, "`SOAK_TIME=%v go test -run '^$' -bench BenchmarkSoakCommand -benchtime 1x -timeout 0 ./internal/soak/` — "+
			"`lockchaos soak --algorithm A --time %v --seed 1` for each seed algorithm, one after the other, the process's RSS "+
			"(VmRSS, the servers are processes of their own) sampled every second; the reference is the same process 10 s in. "+
			"Load average before: %s.\n\n", d, d, bench.LoadAvg())
		s.WriteString("| algorithm | verdict | RSS 10 s (ref) | RSS at " + (d / 10).String() + " | at " + (d / 2).String() + " | at " + d.String() +
			" | peak | incidents (violations) | per hour (95%) | faults fired | first violation | the catalogue's failures the mix aims at, found unaimed |\n" +
			"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, alg := range algs {
			dir := filepath.Join(out, alg)
			rss, rep, err := soakProcess(cli, []string{"soak", "--algorithm", alg, "--time", d.String(), "--seed", "1", "--quiet", "--out", dir},
				[]time.Duration{10 * time.Second, d / 10, d / 2, d})
			if err != nil {
				// The row says what went wrong; the other algorithms' measurements are kept.
				b.Errorf("%s: %v", alg, err)
				rss = append(rss, make([]uint64, 5-min(len(rss), 5))...) // none when it could not start
				fmt.Fprintf(&s, "| %s | **failed**: %s | %s | %s | %s | %s | %s | | | | | |\n", alg,
					strings.ReplaceAll(strings.TrimSpace(tail(err.Error(), 300)), "\n", " "), mb(rss[0]), mb(rss[1]), mb(rss[2]), mb(rss[3]), mb(rss[4]))
				continue
			}
			a := rep.Algorithms[0]
			first := "—"
			if a.First != nil {
				first = fmt.Sprintf("%.1f s", a.First.AtMs/1000)
			}
			fmt.Fprintf(&s, "| %s | %s | %s | %s | %s | %s | %s | %d (%d) | %.3g (%.3g–%.3g) | %d | %s | %s |\n",
				alg, a.Verdict, mb(rss[0]), mb(rss[1]), mb(rss[2]), mb(rss[3]), mb(rss[4]), a.Incidents, a.Violations,
				a.PerHour.Value, a.PerHour.Lo, a.PerHour.Hi, a.FaultsFired, first, found(alg, a, rep.Kinds))
		}
		cmpDir := filepath.Join(out, "compare")
		_, rep, err := soakProcess(cli, []string{"soak", "--algorithms", "token,redlock,zookeeper", "--time", cmpTime.String(),
			"--seed", "1", "--quiet", "--out", cmpDir}, nil)
		if err != nil {
			b.Errorf("compare: %v", err)
			fmt.Fprintf(&s, "\nThe comparison failed: %s\n", strings.TrimSpace(tail(err.Error(), 300)))
			break
		}
		fmt.Fprintf(&s, "\nThe comparison (`lockchaos soak --algorithms token,redlock,zookeeper --time %v --seed 1`, one plan of %d faults: %s) is out/soak-bench/compare/soak.html:\n\n"+
			"| algorithm | verdict | incidents (violations) | per hour (95%%) | per fault fired | lock held | longest stall | most under |\n|---|---|---:|---:|---:|---:|---:|---|\n",
			cmpTime, rep.Faults, strings.Join(rep.Kinds, ", "))
		for _, a := range rep.Algorithms {
			most := "—"
			if len(a.Groups) > 0 {
				most = fmt.Sprintf("%s (%d incidents)", a.Groups[0].Cause, a.Groups[0].Incidents)
			}
			fmt.Fprintf(&s, "| %s | %s | %d (%d) | %.3g (%.3g–%.3g) | %.3g | %.0f%% | %.0f ms | %s |\n", a.Algorithm, a.Verdict, a.Incidents,
				a.Violations, a.PerHour.Value, a.PerHour.Lo, a.PerHour.Hi, a.PerFault.Value, 100*a.HeldShare, a.LongestStallMs, most)
		}
		fmt.Fprintf(&s, "\nLoad average after: %s.\n", bench.LoadAvg())
	}
	path, err := bench.File()
	if err != nil {
		b.Fatal(err)
	}
	if err := benchmd.Update(path, "Soak: lockchaos soak", s.String()); err != nil {
		b.Fatal(err)
	}
}

// soakProcess runs the CLI and samples its RSS at each of the times given (then its peak), and
// returns its soak.json.
func soakProcess(cli string, args []string, at []time.Duration) ([]uint64, *soak.Report, error) {
	cmd := exec.Command(cli, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	samples := make([]uint64, len(at)+1)
	done := make(chan struct{})
	go func() {
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
			v := rss(cmd.Process.Pid)
			el := time.Since(start)
			mu.Lock()
			for i, t := range at {
				if el <= t+time.Second {
					samples[i] = v // the last sample at or before t
				}
			}
			samples[len(at)] = max(samples[len(at)], v)
			mu.Unlock()
		}
	}()
	err := cmd.Wait()
	close(done)
	mu.Lock()
	defer mu.Unlock()
	if code := cmd.ProcessState.ExitCode(); err != nil && code != 1 && code != 2 {
		return samples, nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(args[slices.Index(args, "--out")+1], soak.JSONFile))
	if err != nil {
		// A panic exits 2 too: what it said is on stderr.
		return samples, nil, fmt.Errorf("%w (exit %d): %s", err, cmd.ProcessState.ExitCode(), stderr.String())
	}
	var rep soak.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return samples, nil, err
	}
	return samples, &rep, nil
}

// rss is a process's resident set, from /proc.
func rss(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// found lists the catalogue's failures of alg that a soak fault reaches, each with whether this
// soak found it (a group of violations under that fault).
func found(alg string, a soak.AlgorithmResult, kinds []string) string {
	var parts []string
	for _, sc := range scenarios.All() {
		code := sc.Expect[alg]
		k, ok := soakOf[sc.Name]
		if !ok || !slices.Contains(kinds, k) || !strings.HasPrefix(code, "U") {
			continue
		}
		// Found: a group under that fault whose class is the catalogue's (Us: the service's,
		// Uc: the client's; U: either) — a long-hold's own client-side violation under a
		// partition is not the partition's service-side failure.
		want := map[string]checker.Class{"Us": checker.ServiceClass, "Uc": checker.ClientClass}[strings.TrimSpace(strings.SplitN(code, ":", 2)[0])]
		hit := slices.ContainsFunc(a.Groups, func(g soak.Group) bool {
			return slices.Contains(strings.Split(g.Cause, " + "), k) && (want == "" || g.Class == want)
		})
		mark := "not found"
		if hit {
			mark = "found"
		}
		parts = append(parts, fmt.Sprintf("%s (%s): %s", sc.Name, strings.SplitN(code, ":", 2)[0], mark))
	}
	if len(parts) == 0 {
		return "none the mix aims at"
	}
	return strings.Join(parts, "; ")
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func mb(v uint64) string { return fmt.Sprintf("%.0f MB", float64(v)/(1<<20)) }
