// Package reports writes what a lockchaos run and a matrix of runs found, for people and for CI:
// per-run HTML with the timeline and the first violation, the matrix page, results.json, junit.xml.
// Every page is one self-contained file (no network) and every string in it is escaped.
package reports

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// File names in a run directory (docs/design.md#command-line-contract).
const (
	ResultFile              = "result.json"
	ReportFile              = "report.html"
	LinearizabilityFile     = "linearizability.html"
	ResourceLinearizability = "resource-linearizability.html"
)

// WriteRun writes result.json, report.html, linearizability.html (the lock check) and
// resource-linearizability.html (the resource check) into dir, creating it if needed. Each file
// is written atomically. It draws from h and out only; it never re-runs a check.
func WriteRun(dir string, h *history.Run, out *checker.Outcome) error {
	if h == nil || out == nil {
		return errors.New("reports: WriteRun needs a history and an outcome")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := writeJSONAtomic(filepath.Join(dir, ResultFile), &out.Result); err != nil {
		return err
	}
	m := buildModel(h, &out.Analysis)
	if err := writeReport(filepath.Join(dir, ReportFile), h, m, &out.Result); err != nil {
		return err
	}
	return errors.Join(
		writeLinearizability(filepath.Join(dir, LinearizabilityFile), "lock service", out.Lock, out.Result.LockCheck, m, out.Result.FirstViolation),
		writeLinearizability(filepath.Join(dir, ResourceLinearizability), "resource", out.Resource, out.Result.ResourceCheck, m, out.Result.FirstViolation),
	)
}

// reportPage is what templates/report.html shows.
type reportPage struct {
	CSS         template.CSS
	Title       string
	Meta        history.Meta
	R           *checker.Result
	Category    string
	Expected    string
	HasExpected bool
	Match       bool
	Explanation string
	AlsoClasses []string
	Violation   *checker.Violation
	ViolDesc    string
	ViolOps     []string
	Timelines   []*timelineView
	Histogram   *histogramView
	Numbers     []numberRow
	Faults      []faultRow
	Warnings    []string
	FaultErrors []string
	Generated   string
}

type numberRow struct {
	Name, Value, Class string
}

type faultRow struct {
	ID                                 int64
	Name, Target, Point, Detail, Error string
	Start, End, Duration               string
}

func writeReport(path string, h *history.Run, m *runModel, r *checker.Result) error {
	p := buildReportPage(h, m, r)
	return writeAtomic(path, func(w io.Writer) error { return pageTemplates.ExecuteTemplate(w, "report.html", p) })
}

func buildReportPage(h *history.Run, m *runModel, r *checker.Result) *reportPage {
	p := &reportPage{
		CSS:       styleCSS,
		Meta:      h.Meta,
		R:         r,
		Category:  category(r),
		Violation: r.FirstViolation,
		Generated: time.Now().UTC().Format(time.RFC3339),
	}
	p.Title = fmt.Sprintf("%s × %s — %s", orDash(r.Algorithm, h.Meta.Algorithm), orDash(r.Scenario, h.Meta.Scenario), p.Category)
	p.Expected = expectedOf(h.Meta.Expected, r)
	if r.Expected != nil {
		p.Expected = *r.Expected
	}
	p.Match, p.HasExpected = matchOf(p.Expected, r)
	switch {
	case r.FirstViolation != nil && r.FirstViolation.Kind == "unbacked-grant":
		p.Explanation = unbackedExplanation
	case r.FirstViolation != nil && r.FirstViolation.Class != "":
		p.Explanation = classExplanation(string(r.FirstViolation.Class))
	default:
		p.Explanation = classExplanation(p.Category)
	}
	first := ""
	if r.ViolationClass != nil {
		first = string(*r.ViolationClass)
	}
	for _, c := range r.ClassesSeen {
		if string(c) != first {
			p.AlsoClasses = append(p.AlsoClasses, string(c))
		}
	}

	vs := resolveViolation(m, r)
	p.Timelines = buildTimelines(m, vs)
	for _, tl := range p.Timelines {
		if tl.Violation != nil && tl.Violation.Marker {
			p.ViolDesc = tl.Violation.Desc
		}
	}
	if r.FirstViolation != nil {
		p.ViolOps = []string{describeRef(m, "A", r.FirstViolation.A), describeRef(m, "B", r.FirstViolation.B)}
		if r.FirstViolation.A == r.FirstViolation.B { // one operation: an unbacked grant
			p.ViolOps = []string{describeRef(m, "the grant", r.FirstViolation.A)}
		}
	}
	p.Histogram = buildHistogram(m, r.AcquireLatencyMs.P50, r.AcquireLatencyMs.P99)
	p.Numbers = numbers(r)
	for _, f := range m.faults {
		row := faultRow{ID: f.ID, Name: f.Name, Target: f.Target, Point: f.Point, Detail: f.Detail, Error: f.Error,
			Start: history.FormatNs(f.Start), End: history.FormatNs(f.End)}
		if f.End != history.Never {
			row.Duration = history.FormatNs(f.End - f.Start)
		} else {
			row.Duration = "did not end"
		}
		p.Faults = append(p.Faults, row)
	}
	p.Warnings = append(append([]string{}, h.Warnings...), r.Warnings...)
	p.FaultErrors = r.FaultErrors
	return p
}

// buildTimelines returns the overview of the whole run and, when it helps, a detail view: around
// the first violation (which carries the marker), else around the first fault, else the start.
func buildTimelines(m *runModel, vs *violationSpan) []*timelineView {
	drawn := len(m.attempts) + len(m.windows) + len(m.accesses) + len(m.releases)
	aggregate := drawn > overviewBudget
	overviewTitle := "Whole run"
	if aggregate {
		overviewTitle += " (aggregated)"
	}
	over := buildTimeline(m, vs, "overview", overviewTitle, 0, max(m.end, 1), aggregate, false)
	if vs == nil && !aggregate {
		return []*timelineView{over}
	}
	f0, f1 := int64(0), int64(0)
	title := "Start of the run, operation by operation"
	switch {
	case vs != nil:
		f0, f1 = vs.f0, vs.f1
		title = "Around the first violation, operation by operation"
	case len(m.faults) > 0:
		f := m.faults[0]
		f0, f1 = f.Start, f.End
		if f.End == history.Never {
			f1 = f.Start + 2*max(m.meta.TTLNs, int64(time.Second))
		}
		title = "Around the first fault, operation by operation"
	}
	from, to := detailWindow(m, f0, f1)
	if !aggregate && float64(to-from) >= 0.8*float64(m.end) {
		// The detail would repeat the overview: mark the violation there instead.
		over = buildTimeline(m, vs, "overview", overviewTitle, 0, max(m.end, 1), false, vs != nil)
		return []*timelineView{over}
	}
	detail := buildTimeline(m, vs, "detail", title, from, to, false, vs != nil)
	return []*timelineView{detail, over}
}

// detailWindow pads the focus [f0, f1] by a quarter of its span on each side, then pulls the ends
// in toward the focus until the operations that start inside fit the detail budget.
func detailWindow(m *runModel, f0, f1 int64) (int64, int64) {
	f1 = min(f1, m.end)
	f0 = min(max(f0, 0), f1)
	pad := max((f1-f0)/4, int64(time.Millisecond))
	from, to := max(0, f0-pad), min(max(m.end, 1), f1+pad)
	if f0 == 0 && f1 == 0 { // no focus: start of the run
		to = max(m.end, 1)
	}
	starts := make([]int64, 0, len(m.attempts)+len(m.accesses)+len(m.releases))
	for _, a := range m.attempts {
		starts = append(starts, a.call)
	}
	for _, a := range m.accesses {
		starts = append(starts, a.call)
	}
	for _, r := range m.releases {
		starts = append(starts, r.call)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	count := func(a, b int64) int {
		return sort.Search(len(starts), func(i int) bool { return starts[i] > b }) -
			sort.Search(len(starts), func(i int) bool { return starts[i] >= a })
	}
	// Each started operation costs roughly one element (plus one per window and release).
	for i := 0; i < 60 && count(from, to)*2 > detailBudget; i++ {
		nf, nt := from+(f0-from)/3, to-(to-f1)/3
		if nf == from && nt == to {
			break
		}
		from, to = nf, nt
	}
	if to <= from {
		to = from + int64(time.Millisecond)
	}
	return from, to
}

// describeRef names one operation of the violation, from the history when it has it (the
// checker's OpRef may carry only the id).
func describeRef(m *runModel, name string, ref checker.OpRef) string {
	o := m.byOp[ref.ID]
	if o == nil {
		return fmt.Sprintf("%s: client %d %s #%d at %s", name, ref.Client, ref.Op, ref.ID, history.FormatMs(ref.CallMs))
	}
	s := fmt.Sprintf("%s: client %d %s #%d, %s → %s (%s)", name, o.Client, o.Op, o.ID, history.FormatNs(o.Call), history.FormatNs(m.clip(o.Return)), o.Status)
	if o.Acq != 0 {
		s += fmt.Sprintf(", under acquire #%d", o.Acq)
	}
	if o.Fence != 0 {
		s += fmt.Sprintf(", fence %d", o.Fence)
	}
	return s
}

func numbers(r *checker.Result) []numberRow {
	opt := func(p *float64) string {
		if p == nil {
			return "—"
		}
		return history.FormatMs(*p)
	}
	bad := func(n int) string {
		if n > 0 {
			return "bad"
		}
		return ""
	}
	rows := []numberRow{
		{"verdict", string(r.Verdict), ""},
		{"duration", history.FormatMs(r.DurationMs), ""},
		{"operations", fmt.Sprint(r.Operations), ""},
		{"acquires ok / failed", fmt.Sprintf("%d / %d", r.AcquiresOk, r.AcquiresFailed), ""},
		{"exclusion violations", fmt.Sprint(r.ExclusionViolations), bad(r.ExclusionViolations)},
		{"service violations (illegal grants)", fmt.Sprint(r.ServiceViolations), bad(r.ServiceViolations)},
		{"lost updates", fmt.Sprint(r.LostUpdates), bad(r.LostUpdates)},
		{"stale writes rejected (fencing)", fmt.Sprint(r.StaleWritesRejected), ""},
		{"time to first violation", opt(r.TTDMs), ""},
		{"acquire latency p50 / p99 / max", fmt.Sprintf("%s / %s / %s", history.FormatMs(r.AcquireLatencyMs.P50), history.FormatMs(r.AcquireLatencyMs.P99), history.FormatMs(r.AcquireLatencyMs.Max)), ""},
		{"throughput", fmt.Sprintf("%.1f critical sections/s", r.ThroughputCSPerS), ""},
		{"longest stall", history.FormatMs(r.LongestStallMs), ""},
		{"checker time", history.FormatMs(r.CheckerMs), ""},
		{"lock linearizability (porcupine)", checkText(r.LockCheck), checkClass(r.LockCheck)},
		{"resource linearizability (porcupine)", checkText(r.ResourceCheck), checkClass(r.ResourceCheck)},
	}
	return rows
}

func checkText(c checker.Check) string {
	if c.Result == "" {
		return "did not run"
	}
	return fmt.Sprintf("%s in %s", c.Result, history.FormatMs(c.Ms))
}

func checkClass(c checker.Check) string {
	switch c.Result {
	case "Illegal", "illegal":
		return "bad"
	case "Unknown", "unknown":
		return "warn"
	}
	return ""
}

func orDash(a, b string) string {
	if a != "" {
		return a
	}
	if b != "" {
		return b
	}
	return "—"
}
