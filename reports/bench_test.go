package reports

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// BenchmarkReportLarge writes the report of a 10-minute, 100k-operation run and loads it in
// headless chromium. The bar (issue 6): it opens in under 3 s. "write" times WriteRun; "load"
// times a navigation to report.html until the load event.
//
// TODO(benchmd): record the numbers in BENCHMARKS.md with internal/benchmd.Update once that
// package exists.
func BenchmarkReportLarge(b *testing.B) {
	h, out := bigRun(1, 5, 10*time.Minute, 100_000)
	dir := b.TempDir()
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			if err := WriteRun(dir, h, out); err != nil {
				b.Fatal(err)
			}
		}
		st, err := os.Stat(filepath.Join(dir, ReportFile))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Size())/1024, "report-KiB")
	})
	if err := WriteRun(dir, h, out); err != nil {
		b.Fatal(err)
	}
	b.Run("load", func(b *testing.B) {
		ctx, _ := browser(b)
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
		b.ReportMetric(float64(n), "dom-elements")
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "load-ms")
	})
}
