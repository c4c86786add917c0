package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestSelftestExitFollowsItsLine: the selftest's exit code is what its summary line says —
// never "passed" with a non-zero exit (a harness error on a first run once printed "selftest
// passed" and exited 255 after a retry). Interrupted before its first run (no servers needed),
// every run is a harness error: the line says FAILED and counts them, each cell is named missed
// with its n/N, and the exit is 255.
func TestSelftestExitFollowsItsLine(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"selftest", "--scenarios", "clock-skew", "--runs", "2", "--out", t.TempDir()}, &out, &errOut)
	line := out.String()
	if code != exitHarness || !strings.Contains(line, "selftest FAILED") || strings.Contains(line, "passed") ||
		!strings.Contains(line, "runs hit a harness error") {
		t.Errorf("exit %d, stdout %q; want 255 and a FAILED line that says why", code, line)
	}
	if !strings.Contains(errOut.String(), "lockchaos: missed: getset-no-compare × clock-skew: caught 0/2 — run 1: error: not run") {
		t.Errorf("stderr %q does not name the missed mutant with its 0/2", errOut.String())
	}
	if !strings.Contains(line, "getset-no-compare × clock-skew: caught 0/2") {
		t.Errorf("stdout %q: with --runs 2 every cell's n/N is listed", line)
	}
}
