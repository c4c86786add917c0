package reports

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
)

// These tests feed WriteRun what the real checker makes of hand-built histories, so the report
// and the checker agree on ids, times and porcupine's data.

func TestWithCheckerUnsafe(t *testing.T) {
	h, _ := pauseRun()
	out := checker.CheckHistory(h, checker.Options{})
	if out.Result.Verdict != checker.Unsafe || out.Result.FirstViolation == nil {
		t.Fatalf("checker says %s (first violation %+v); the fixture is meant to be unsafe", out.Result.Verdict, out.Result.FirstViolation)
	}
	dir := t.TempDir()
	if err := WriteRun(dir, h.Run(), out); err != nil {
		t.Fatal(err)
	}
	m := buildModel(h.Run(), &out.Analysis)
	vs := resolveViolation(m, &out.Result)
	if vs == nil || vs.a == nil && vs.b == nil {
		t.Errorf("the checker's first violation %+v does not resolve to windows in the history", out.Result.FirstViolation)
	}
	page := readFile(t, filepath.Join(dir, ReportFile))
	if strings.Count(page, `id="first-violation"`) != 1 {
		t.Errorf("report.html: want one first-violation marker")
	}
	for _, f := range []string{LinearizabilityFile, ResourceLinearizability} {
		p := readFile(t, filepath.Join(dir, f))
		if !strings.Contains(p, "const data") || !strings.Contains(p, `"Tag":"fault client-1"`) {
			t.Errorf("%s is not porcupine's page with the fault annotated", f)
		}
	}
}

func TestWithCheckerSafe(t *testing.T) {
	h, _ := safeRun()
	out := checker.CheckHistory(h, checker.Options{})
	if out.Result.Verdict != checker.Safe {
		t.Fatalf("checker says %s for the safe fixture: %+v", out.Result.Verdict, out.Result.FirstViolation)
	}
	dir := t.TempDir()
	if err := WriteRun(dir, h.Run(), out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(readFile(t, filepath.Join(dir, ReportFile)), `id="first-violation"`) {
		t.Errorf("safe report has a first-violation marker")
	}
}

func TestWithCheckerSkipVisualization(t *testing.T) {
	h, _ := pauseRun()
	out := checker.CheckHistory(h, checker.Options{SkipVisualization: true})
	dir := t.TempDir()
	if err := WriteRun(dir, h.Run(), out); err != nil {
		t.Fatal(err)
	}
	if p := readFile(t, filepath.Join(dir, LinearizabilityFile)); !strings.Contains(p, `id="no-linearization"`) || !strings.Contains(p, "visualization skipped") {
		t.Errorf("skipped visualization does not get the notice page")
	}
}
