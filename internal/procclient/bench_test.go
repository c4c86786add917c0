package procclient

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms/process"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/bench"
	"github.com/lockchaos/lockchaos/internal/benchmd"
)

const (
	benchRun  = 3 * time.Second
	benchWarm = 500 * time.Millisecond
)

// rate runs alg with n clients on their own locks (no hold, no think, no proxy) and returns
// critical sections per second and the mean µs of one acquire or release, counted from benchWarm
// after the first invocation (a process client's start-up is not in the rate) to benchRun.
func rate(b *testing.B, alg string, n int) (float64, float64) {
	dir := b.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := harness.Run(ctx, harness.Config{Algorithm: alg, Proxies: harness.ProxyNever, Duration: benchRun,
		Tail: time.Millisecond, Seed: 1, Dir: dir,
		Workload: harness.Workload{Clients: n, TTL: 10 * time.Second, LockPerClient: true, NoWait: true}})
	if errors.Is(err, cluster.ErrMissingBinary) || errors.Is(err, process.ErrMissing) {
		b.Skipf("skip: %v", err)
	}
	if err != nil {
		b.Fatalf("run %s: %v", alg, err)
	}
	h, err := history.ReadFile(res.HistoryPath)
	if err != nil {
		b.Fatal(err)
	}
	var t0 int64 = -1
	inv := map[int64]history.Event{}
	var cs, ops int
	var opNs int64
	for _, e := range h.Events {
		if e.Type == history.TypeInvoke {
			if t0 < 0 {
				t0 = e.AtNs
			}
			inv[e.ID] = e
			continue
		}
		i, ok := inv[e.ID]
		if !ok || i.AtNs < t0+int64(benchWarm) || e.AtNs >= t0+int64(benchRun) {
			continue
		}
		if i.Op == history.OpAcquire || i.Op == history.OpRelease {
			ops++
			opNs += e.AtNs - i.AtNs
		}
		if i.Op == history.OpRelease && e.Type == history.TypeOk {
			cs++
		}
	}
	return float64(cs) / (benchRun - benchWarm).Seconds(), float64(opNs) / float64(max(ops, 1)) / 1e3
}

// BenchmarkProcessClientOverhead compares the same SET NX PX + Lua lock as a Python process
// client (docs/examples/mylock.py) and as the built-in token, at 1 and 8 clients, and writes
// "Process-client overhead".
func BenchmarkProcessClientOverhead(b *testing.B) {
	name, err := RegisterFile(filepath.Join("..", "..", "docs", "examples", "mylock.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	reps := bench.Repeats(3)
	load := bench.LoadAvg()
	var s strings.Builder
	for _, n := range []int{1, 8} {
		for _, alg := range []string{"token", name} {
			var css, uss []float64
			b.Run(fmt.Sprintf("%s/clients=%d", alg, n), func(b *testing.B) {
				for range b.N {
					for range reps {
						cs, us := rate(b, alg, n)
						css, uss = append(css, cs), append(uss, us)
					}
				}
				b.ReportMetric(bench.Median(css), "cs/s")
				b.ReportMetric(bench.Median(uss), "µs/op")
			})
			if len(css) > 0 {
				fmt.Fprintf(&s, "| %s | %d | %.0f | %.0f |\n", alg, n, bench.Median(css), bench.Median(uss))
			}
		}
	}
	if s.Len() == 0 {
		return
	}
	body := "`go test -run '^$' -bench BenchmarkProcessClientOverhead -benchtime 1x ./internal/procclient/` — the same " +
		"lock (SET key token NX PX ttl; release by Lua compare-and-delete) as the built-in `token` (Go, in the harness " +
		"process) and as `docs/examples/mylock.py` (a Python process client on Debian's /usr/bin/python3 and redis-py, " +
		"speaking JSON lines). Each client on its own lock (no contention), hold 0, think 0, TTL 10s, no proxy, " +
		fmt.Sprintf("redis-single; counted from %v after the first invocation to %v; medians of %d repeats. ", benchWarm, benchRun, reps) +
		"µs/op = mean time of one acquire or release as the harness saw it (the protocol round trip plus the lock's " +
		"own Redis command). The machine is shared (2 cores, other agents running): compare the rows with each other, " +
		"not with other sections. Load average before: " + load + ".\n\n" +
		"| lock | clients | CS/s | µs per op |\n|---|---:|---:|---:|\n" + s.String()
	path, err := bench.File()
	if err != nil {
		b.Fatal(err)
	}
	if err := benchmd.Update(path, "Process-client overhead", body); err != nil {
		b.Fatal(err)
	}
}
