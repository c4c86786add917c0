package reports

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/lockchaos/lockchaos/checker"
)

// browser starts headless chromium for a test, or skips (fails when LOCKCHAOS_REQUIRE_BROWSER=1,
// as CI sets it) when there is none. The returned console collects errors and exceptions.
func browser(tb testing.TB) (context.Context, *console) {
	tb.Helper()
	path := os.Getenv("LOCKCHAOS_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		msg := "no chromium found (apt-get install chromium, or set LOCKCHAOS_CHROMIUM)"
		if os.Getenv("LOCKCHAOS_REQUIRE_BROWSER") == "1" {
			tb.Fatal(msg + "; LOCKCHAOS_REQUIRE_BROWSER=1 makes this a failure")
		}
		tb.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in containers
		chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	tb.Cleanup(func() { cancelC(); cancelA() })
	// The first Run starts the browser and must not carry a timeout (it would end the browser).
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		tb.Fatalf("start chromium %s: %v", path, err)
	}
	c := &console{}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				c.add(m.String() + " (" + m.URL + ")")
			}
		}
	}()
	return ctx, c
}

type console struct {
	mu   sync.Mutex
	errs []string
}

func (c *console) add(s string) { c.mu.Lock(); c.errs = append(c.errs, s); c.mu.Unlock() }

// take returns and clears what was collected.
func (c *console) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.errs
	c.errs = nil
	return e
}

// open loads a file and returns what expr evaluates to, failing the test on console errors.
func open[T any](t *testing.T, ctx context.Context, c *console, file, expr string) T {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file)); err != nil {
		t.Fatalf("open %s: %v", file, err)
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: evaluate %s: %v", file, expr, err)
	}
	// Console messages arrive asynchronously; give them a moment.
	time.Sleep(150 * time.Millisecond)
	if errs := c.take(); len(errs) > 0 {
		t.Errorf("%s: console errors:\n%s", filepath.Base(file), strings.Join(errs, "\n"))
	}
	return v
}

// screenshot saves a full-page PNG into the test's temp dir and LOCKCHAOS_SCREENSHOT_DIR if set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dirs := []string{t.TempDir()}
	if d := os.Getenv("LOCKCHAOS_SCREENSHOT_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
}

func TestBrowser(t *testing.T) {
	ctx, con := browser(t)
	out := t.TempDir()
	hU, oU := bigRun(3, 5, 2*time.Minute, 12_000)
	hS, oS := safeRun()
	hP, oP := pauseRun()
	runs := []struct {
		dir    string
		unsafe bool
		write  func(string) error
	}{
		{"client-pause/setnx-px", true, func(d string) error { return WriteRun(d, hU, oU) }},
		{"baseline/token", false, func(d string) error { return WriteRun(d, hS, oS) }},
		{"client-pause/token", true, func(d string) error { return WriteRun(d, hP, oP) }},
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
		n := open[int](t, ctx, con, filepath.Join(out, r.dir, ReportFile), `document.querySelectorAll("#first-violation").length`)
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
		screenshot(t, ctx, fmt.Sprintf("report-%d-%s", i, strings.ReplaceAll(r.dir, "/", "-")))
		open[string](t, ctx, con, filepath.Join(out, r.dir, LinearizabilityFile), `document.title`)
	}

	keys := open[[]string](t, ctx, con, filepath.Join(out, IndexFile),
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
	screenshot(t, ctx, "index")

	// Porcupine's own page, with the checker's real linearization info and our annotations.
	hC, _ := pauseRun()
	oC := checker.CheckHistory(hC, checker.Options{})
	cdir := filepath.Join(out, "checked")
	if err := WriteRun(cdir, hC, oC); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{LinearizabilityFile, ResourceLinearizability} {
		n := open[int](t, ctx, con, filepath.Join(cdir, f), `document.querySelectorAll("#canvas svg").length`)
		if n == 0 {
			t.Errorf("%s: porcupine drew nothing", f)
		}
		screenshot(t, ctx, "checked-"+strings.TrimSuffix(f, ".html"))
	}
	// A cell links to its report, and the link works. The step is bounded: a missing element
	// must fail the test, not hang it.
	open[int](t, ctx, con, filepath.Join(out, IndexFile), `1`)
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
	ctx, con := browser(t)
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
		errs = append(errs, con.take()...)
	}
	all := strings.Join(errs, "\n")
	if !strings.Contains(all, "boom") || !strings.Contains(all, "undefinedFn") {
		t.Fatalf("console listener missed errors; got %q", errs)
	}
}
