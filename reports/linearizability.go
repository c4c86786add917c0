package reports

import (
	"fmt"
	"html/template"
	"io"
	"reflect"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// writeLinearizability writes porcupine's own visualization of one check, with the run's faults
// added as annotations, or a page saying why there is none.
func writeLinearizability(path, what string, lin *checker.Linearization, c checker.Check, m *runModel, v *checker.Violation) error {
	if lin == nil || reflect.ValueOf(lin.Info).IsZero() {
		reason := "the checker did not produce linearization info for it (checked with visualization skipped)"
		switch c.Result {
		case "":
			reason = "the check did not run (it was skipped, or the history had no operations for it)"
		case string(porcupine.Unknown), "unknown":
			reason = fmt.Sprintf("the check timed out after %s: porcupine's answer is Unknown, which is never safe", history.FormatMs(c.Ms))
		}
		return writeNotice(path, what, reason, m)
	}
	model := safeModel(lin.Model)
	info := lin.Info // a copy: annotations must not leak into the caller's Outcome
	info.AddAnnotations(annotations(m))
	if v != nil {
		info.AddAnnotations([]porcupine.Annotation{violationAnnotation(v)})
	}
	return writeAtomic(path, func(w io.Writer) (err error) {
		// Visualize replays the model and panics if the info does not fit it; a broken
		// visualization must not cost the rest of the report.
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("porcupine visualization of the %s check panicked: %v", what, p)
			}
		}()
		return porcupine.Visualize(model, info, w)
	})
}

// safeModel escapes what porcupine's page inserts as HTML (state descriptions and operation
// metadata go through innerHTML there; operation descriptions and annotations do not).
func safeModel(m porcupine.Model) porcupine.Model {
	if ds := m.DescribeState; ds != nil {
		m.DescribeState = func(s any) string { return template.HTMLEscapeString(ds(s)) }
	}
	if dm := m.DescribeOperationMetadata; dm != nil {
		m.DescribeOperationMetadata = func(i any) string { return template.HTMLEscapeString(dm(i)) }
	}
	return m
}

// annotations puts each fault on its own row, labelled by its target, in the history's time
// (nanoseconds since the run's start, the times the checker hands porcupine).
func annotations(m *runModel) []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, f := range m.faults {
		tag := "fault"
		if f.Target != "" {
			tag += " " + f.Target
		}
		details := fmt.Sprintf("fault %d %s on %s, %s → %s", f.ID, f.Name, f.Target, history.FormatNs(f.Start), history.FormatNs(f.End))
		if f.Point != "" {
			details += " at " + f.Point
		}
		if f.Detail != "" {
			details += "; " + f.Detail
		}
		if f.Error != "" {
			details += "; error: " + f.Error
		}
		out = append(out, porcupine.Annotation{
			Tag: tag, Start: f.Start, End: m.clip(f.End), Description: f.Name, Details: details,
			BackgroundColor: "#fbe7a1",
		})
	}
	return out
}

type noticePage struct {
	CSS    template.CSS
	What   string
	Reason string
	Meta   history.Meta
}

func writeNotice(path, what, reason string, m *runModel) error {
	p := noticePage{CSS: styleCSS, What: what, Reason: reason, Meta: m.meta}
	return writeAtomic(path, func(w io.Writer) error { return pageTemplates.ExecuteTemplate(w, "notice.html", p) })
}

// violationAnnotation marks the first violation on porcupine's page.
func violationAnnotation(v *checker.Violation) porcupine.Annotation {
	at := int64(v.AtMs * float64(time.Millisecond))
	return porcupine.Annotation{Tag: "first violation", Start: at, End: at, Description: v.Kind,
		Details: v.Explanation, BackgroundColor: "#f8c9c9"}
}
