package reports

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/internal/browsertest"
)

func TestBrowser(t *testing.T) {
	ctx, con := browsertest.Start(t)
	out := t.TempDir()
	hU, oU := bigRun(3, 5, 2*time.Minute, 12_000)
	hS, oS := safeRun()
	hP, oP := pauseRun()
	runs := []struct {
		dir    string
		unsafe bool
		write  func(string) error
	}{
		{"client-pause/setnx-px", true, func(d string) error { return WriteRun(d, hU.Run(), oU) }},
		{"baseline/token", false, func(d string) error { return WriteRun(d, hS.Run(), oS) }},
		{"client-pause/token", true, func(d string) error { return WriteRun(d, hP.Run(), oP) }},
	}
	for _, r := range runs {
		if err := r.write(filepath.Join(out, r.dir)); err != nil {
			t.Fatal(err)
		}
	}
	cells := append(sampleCells(),
		Cell{Scenario: "client-pause", Algorithm: "setnx-px", Dir: runs[0].dir, Result: &oU.Result, Expected: "Uc"},
		Cell{Scenario: "baseline", Algorithm: "token", Dir: runs[1].dir, Result: &oS.Result, Expected: "S"},
	)
	cells[1] = cells[len(cells)-1] // the sample's baseline/token is replaced by the real run
	cells = cells[:len(cells)-1]
	if err := WriteMatrix(out, cells, MatrixMeta{Title: "browser test matrix", Command: "lockchaos matrix --seed 3"}); err != nil {
		t.Fatal(err)
	}

	for i, r := range runs {
		n := browsertest.Open[int](t, ctx, con, filepath.Join(out, r.dir, ReportFile), `document.querySelectorAll("#first-violation").length`)
		if want := map[bool]int{true: 1, false: 0}[r.unsafe]; n != want {
			t.Errorf("%s: %d #first-violation elements, want %d", r.dir, n, want)
		}
		if r.unsafe {
			// The marker must be drawn, not just present: it has a box on screen.
			w, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.getElementById("first-violation").getBoundingClientRect().width`))
			if err != nil || w <= 0 {
				t.Errorf("%s: first-violation has width %v (%v)", r.dir, w, err)
			}
		}
		browsertest.Screenshot(t, ctx, fmt.Sprintf("report-%d-%s", i, strings.ReplaceAll(r.dir, "/", "-")))
		browsertest.Open[string](t, ctx, con, filepath.Join(out, r.dir, LinearizabilityFile), `document.title`)
	}

	keys := browsertest.Open[[]string](t, ctx, con, filepath.Join(out, IndexFile),
		`Array.from(document.querySelectorAll("[data-cell]")).map(e => e.dataset.cell)`)
	got := map[string]bool{}
	for _, k := range keys {
		got[k] = true
	}
	for _, c := range cells {
		if k := c.Scenario + "/" + c.Algorithm; !got[k] {
			t.Errorf("index.html: no cell %s (found %v)", k, keys)
		}
	}
	browsertest.Screenshot(t, ctx, "index")

	// Porcupine's own page, with the checker's real linearization info and our annotations.
	hC, _ := pauseRun()
	oC := checker.CheckHistory(hC, checker.Options{})
	cdir := filepath.Join(out, "checked")
	if err := WriteRun(cdir, hC.Run(), oC); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{LinearizabilityFile, ResourceLinearizability} {
		n := browsertest.Open[int](t, ctx, con, filepath.Join(cdir, f), `document.querySelectorAll("#canvas svg").length`)
		if n == 0 {
			t.Errorf("%s: porcupine drew nothing", f)
		}
		browsertest.Screenshot(t, ctx, "checked-"+strings.TrimSuffix(f, ".html"))
	}
	// A cell links to its report, and the link works. The step is bounded: a missing element
	// must fail the test, not hang it.
	browsertest.Open[int](t, ctx, con, filepath.Join(out, IndexFile), `1`)
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	err := chromedp.Do(cctx,
		chromedp.Click(chromedp.CSS(`[data-cell="client-pause/setnx-px"] a`)),
		chromedp.WaitVisible(chromedp.ID("verdict")),
	)
	loaded := false
	if err == nil {
		loaded, err = chromedp.Run(cctx, chromedp.Evaluate[bool](`document.querySelector("#first-violation") !== null`))
	}
	if err != nil || !loaded {
		t.Errorf("following a matrix cell to its report: loaded %v, err %v", loaded, err)
	}
}

// TestBrowserCatchesConsoleErrors guards the guard: a page that logs an error and throws must be
// seen, or TestBrowser's "no console errors" would pass vacuously.
func TestBrowserCatchesConsoleErrors(t *testing.T) {
	ctx, con := browsertest.Start(t)
	p := filepath.Join(t.TempDir(), "bad.html")
	if err := os.WriteFile(p, []byte(`<p>x</p><script>console.error("boom"); undefinedFn();</script>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+p)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	var errs []string
	for len(errs) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		errs = append(errs, con.Take()...)
	}
	all := strings.Join(errs, "\n")
	if !strings.Contains(all, "boom") || !strings.Contains(all, "undefinedFn") {
		t.Fatalf("console listener missed errors; got %q", errs)
	}
}
