package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/benchmd"
	"github.com/lockchaos/lockchaos/internal/browsertest"
)

// BenchmarkReportLarge writes the report of a 10-minute, 100k-operation run and loads it in
// headless chromium. The bar (issue 6): it opens in under 3 s. "write" times WriteRun; "load"
// times a navigation to report.html until the load event. The numbers go to the "Report load
// time" section of BENCHMARKS.md.
func BenchmarkReportLarge(b *testing.B) {
	h, out := bigRun(1, 5, 10*time.Minute, 100_000)
	dir := b.TempDir()
	var writeD, loadD time.Duration
	var kib float64
	var elems int
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			if err := WriteRun(dir, h.Run(), out); err != nil {
				b.Fatal(err)
			}
		}
		st, err := os.Stat(filepath.Join(dir, ReportFile))
		if err != nil {
			b.Fatal(err)
		}
		kib = float64(st.Size()) / 1024
		writeD = b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(kib, "report-KiB")
	})
	if err := WriteRun(dir, h.Run(), out); err != nil {
		b.Fatal(err)
	}
	b.Run("load", func(b *testing.B) {
		ctx, _ := browsertest.Start(b)
		url := "file://" + filepath.Join(dir, ReportFile)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.getElementsByTagName("*").length`))
		if err != nil {
			b.Fatal(err)
		}
		elems, loadD = n, b.Elapsed()/time.Duration(b.N)
		b.ReportMetric(float64(n), "dom-elements")
		b.ReportMetric(float64(loadD.Microseconds())/1000, "load-ms")
	})
	if writeD == 0 || loadD == 0 {
		return // a sub-benchmark was filtered out or skipped: nothing complete to record
	}
	body := fmt.Sprintf("`go test -run XXX -bench BenchmarkReportLarge ./reports/` — a generated 10-minute run, "+
		"5 clients, %d operations, %d faults, one client-class violation; report.html opened as a file:// URL "+
		"in headless chromium (navigate until the load event). The bar: under 3 s.\n\n"+
		"| step | time/op | |\n|---|---:|---|\n"+
		"| WriteRun (result.json, report.html, 2 porcupine notice pages) | %s | report.html %.0f KiB |\n"+
		"| load report.html in chromium | %s | %d DOM elements |\n",
		out.Result.Operations, len(history.Faults(h.Events)), writeD.Round(time.Millisecond), kib, loadD.Round(time.Millisecond), elems)
	if err := benchmd.Update("../BENCHMARKS.md", "Report load time", body); err != nil {
		b.Fatal(err)
	}
}
