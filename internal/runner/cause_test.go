package runner_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/browsertest"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestServiceViolationNamesItsCause runs getset × latency against real servers: the holder's
// release GET is answered late, a waiter takes the lock over, and the holder's DEL removes the new
// holder's key. The verdict line (decided_by) and the report must name that release — which
// client's which operation at what time — not a generic cause; the report is read in a real
// browser.
func TestServiceViolationNamesItsCause(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real servers")
	}
	s, err := scenarios.Lookup("slow-release")
	if err != nil {
		t.Fatal(err)
	}
	cell, err := s.Cell("getset")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, _, err := runner.RunCell(ctx, cell, runner.Options{Out: out, Seed: 1}, 0)
	if errors.Is(err, cluster.ErrMissingBinary) {
		testenv.MissingServer(t, err)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r := rc.Result
	if r.Verdict != checker.Unsafe || r.ViolationClass == nil || *r.ViolationClass != checker.ServiceClass {
		t.Fatalf("verdict %s class %v (%s), want unsafe of service class", r.Verdict, r.ViolationClass, r.DecidedBy)
	}
	cause := r.FirstViolation.Cause
	if !strings.Contains(cause, "release (op ") || !strings.Contains(cause, "removed client") {
		t.Fatalf("first violation's cause %q does not name the release that removed the key", cause)
	}
	if !strings.Contains(r.DecidedBy, cause) {
		t.Errorf("decided_by %q does not carry the cause %q", r.DecidedBy, cause)
	}

	bctx, con := browsertest.Start(t)
	report := filepath.Join(out, rc.Dir, "report.html")
	shown := browsertest.Open[string](t, bctx, con, report, `document.getElementById("cause").textContent`)
	if !strings.Contains(shown, cause) {
		t.Errorf("report's cause %q, want %q", shown, cause)
	}
	decided := browsertest.Open[string](t, bctx, con, report, `document.getElementById("decided-by").textContent`)
	if !strings.Contains(decided, "illegal grant") {
		t.Errorf("report's headline %q does not say what decided the verdict", decided)
	}
	browsertest.Screenshot(t, bctx, "getset-latency-cause")
}
