package checker

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/benchmd"
)

// benchTimeout bounds each porcupine check in the benchmarks; a check that needs more is shown as
// timed out in the table rather than run for ever.
const benchTimeout = 2 * time.Minute

type benchRow struct {
	name              string
	ops, clients      int
	nsPerOp           float64
	mbPerOp, allocsOp float64
	peakMB            float64
	note              string
}

// BenchmarkChecker measures each check on generated histories of a correct lock with contending
// clients, and writes the table to BENCHMARKS.md, section "Checker speed".
func BenchmarkChecker(b *testing.B) {
	var rows []benchRow
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		for _, c := range []int{5, 50} {
			h := generate(genConfig{Clients: c, Ops: n, TTL: time.Second, Seed: 1, Noise: true})
			r := newRun(h.Run(), Options{SkipVisualization: true, Timeout: benchTimeout})
			res := r.resourceOps()
			type job struct {
				name string
				skip string
				run  func() string
			}
			jobs := []job{
				{name: "exclusion", run: func() string { r.exclusion(r.windows()); return "" }},
				{name: "illegal-grant sweep", run: func() string { r.illegalGrants(); return "" }},
				{name: "porcupine lock", run: func() string { c, _ := r.checkLock(); return c.Result }},
				{name: "porcupine resource", run: func() string { c, _ := r.checkResource(res); return c.Result }},
				{name: "whole check", run: func() string {
					o := CheckHistory(h, Options{SkipVisualization: true, Timeout: benchTimeout})
					return string(o.Result.Verdict)
				}},
			}
			for _, j := range jobs {
				row := benchRow{name: j.name, ops: len(r.ops), clients: c}
				b.Run(fmt.Sprintf("%s/ops=%d/clients=%d", strings.ReplaceAll(j.name, " ", "-"), n, c), func(b *testing.B) {
					if j.skip != "" {
						row.note = j.skip
						b.Skip(j.skip)
					}
					b.ReportAllocs()
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					stop := peakHeap()
					b.ResetTimer()
					var note string
					for range b.N {
						note = j.run()
					}
					b.StopTimer()
					peak := stop()
					runtime.ReadMemStats(&after)
					row.nsPerOp = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
					row.mbPerOp = float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N) / (1 << 20)
					row.allocsOp = float64(after.Mallocs-before.Mallocs) / float64(b.N)
					row.peakMB = float64(peak) / (1 << 20)
					row.note = note
					if note == "Unknown" {
						row.note = fmt.Sprintf("Unknown: timed out at %v", benchTimeout)
					}
				})
				rows = append(rows, row)
			}
		}
	}
	if err := benchmd.Update("../BENCHMARKS.md", "Checker speed", table(rows)); err != nil {
		b.Fatal(err)
	}
}

func table(rows []benchRow) string {
	var s strings.Builder
	s.WriteString("`go test -run XXX -bench BenchmarkChecker -benchtime 1x ./checker/` — generated histories of a correct lock " +
		"(TTL 1s, clients contending, 2% failed or unknown acquires); operations = invocations. " +
		"Peak = largest rise of the live heap during the runs. Porcupine checks run with a " + benchTimeout.String() + " timeout.\n\n")
	s.WriteString("| check | operations | clients | time/op | alloc/op | allocs/op | peak heap | result |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		if r.nsPerOp == 0 {
			fmt.Fprintf(&s, "| %s | %d | %d | – | – | – | – | %s |\n", r.name, r.ops, r.clients, r.note)
			continue
		}
		fmt.Fprintf(&s, "| %s | %d | %d | %v | %.1f MB | %.0f | %.0f MB | %s |\n", r.name, r.ops, r.clients,
			time.Duration(r.nsPerOp).Round(time.Microsecond), r.mbPerOp, r.allocsOp, r.peakMB, r.note)
	}
	return s.String()
}

// peakHeap samples the live heap until the returned function is called, which returns the largest
// rise above the starting value.
func peakHeap() func() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if v := read(); v > base && v-base > peak.Load() {
				peak.Store(v - base)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); <-finished; return peak.Load() }
}
