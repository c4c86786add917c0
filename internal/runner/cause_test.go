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
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestServiceViolationNamesItsCause runs getset × latency against real servers: the holder's
// release GET is answered late, a waiter takes the lock over, and the holder's DEL removes the new
// holder's key. The verdict line (decided_by) and the report must name that release — which
// client's which operation at what time — not a generic cause; the report is read in a real
// browser. The cell must break the lock in one of three seeds: a run breaks it only when the held
// reply returns after a takeover and a third client acquires within the new holder's hold, which
// a loaded machine missed once (how often the catalogue's cell catches it is selftest's and
// BENCHMARKS.md's measure; this test is about naming the cause).
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
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var rc reports.Cell
	for seed := int64(1); seed <= 3; seed++ {
		rc, _, err = runner.RunCell(ctx, cell, runner.Options{Out: out, Seed: seed}, 0)
		if errors.Is(err, cluster.ErrMissingBinary) {
			testenv.MissingServer(t, err)
		}
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		t.Logf("seed %d: %s (%s)", seed, rc.Result.Verdict, rc.Result.DecidedBy)
		if rc.Result.Verdict == checker.Unsafe {
			break
		}
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
