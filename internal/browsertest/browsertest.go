// Package browsertest opens lockchaos's pages in a real headless Chromium for tests (driven by
// chromedp): it fails on console errors, and saves screenshots for people to look at.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// Start starts headless chromium for a test, or skips (fails when LOCKCHAOS_REQUIRE_BROWSER=1,
// as CI sets it) when there is none. The returned console collects errors and exceptions.
func Start(tb testing.TB) (context.Context, *Console) {
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
		testenv.Missing(tb, testenv.RequireBrowser, msg)
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
	c := &Console{}
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

// Console collects the errors and exceptions pages log.
type Console struct {
	mu   sync.Mutex
	errs []string
}

func (c *Console) add(s string) { c.mu.Lock(); c.errs = append(c.errs, s); c.mu.Unlock() }

// Take returns and clears what was collected.
func (c *Console) Take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.errs
	c.errs = nil
	return e
}

// Open loads a file and returns what expr evaluates to, failing the test on console errors.
func Open[T any](t *testing.T, ctx context.Context, c *Console, file, expr string) T {
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
	if errs := c.Take(); len(errs) > 0 {
		t.Errorf("%s: console errors:\n%s", filepath.Base(file), strings.Join(errs, "\n"))
	}
	return v
}

// Screenshot saves a full-page PNG into the test's temp dir and LOCKCHAOS_SCREENSHOT_DIR if set.
func Screenshot(t *testing.T, ctx context.Context, name string) {
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
