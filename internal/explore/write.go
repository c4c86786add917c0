package explore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	_ "embed"

	"gopkg.in/yaml.v3"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

//go:embed templates/explore.html
var pageSource string

var page = template.Must(template.New("explore").Funcs(template.FuncMap{
	"dash": orDash,
	"ttd":  fmtTTD,
}).Parse(pageSource))

// write writes explore.json, explore-scenarios.yaml and explore.html, each whole or not at all.
func (x *explorer) write() error {
	if err := os.MkdirAll(x.o.Out, 0o755); err != nil {
		return fmt.Errorf("explore: make %s: %w", x.o.Out, err)
	}
	js, err := json.MarshalIndent(x.rep, "", "  ")
	if err != nil {
		return fmt.Errorf("explore: encode report: %w", err)
	}
	seen := map[string]bool{}
	file := scenarios.File{}
	for _, s := range x.yaml {
		if !seen[s.Name] {
			seen[s.Name] = true
			file.Scenarios = append(file.Scenarios, s)
		}
	}
	var ys []byte
	if len(file.Scenarios) > 0 {
		if ys, err = yaml.Marshal(file); err != nil {
			return fmt.Errorf("explore: encode scenarios: %w", err)
		}
	}
	var html bytes.Buffer
	if err := page.Execute(&html, x.rep.view()); err != nil {
		return fmt.Errorf("explore: render page: %w", err)
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{JSONFile, append(js, '\n')}, {ScenarioFile, ys}, {HTMLFile, html.Bytes()}} {
		if f.b == nil {
			continue
		}
		if err := reports.WriteFile(filepath.Join(x.o.Out, f.name), f.b); err != nil {
			return err
		}
	}
	return nil
}

// row is one line of the table, for the terminal and the page.
type row struct {
	Point, Fault, Status, Verdict, Class, Min, TTD, Command, Report, Note string
	Cat                                                                   string // the verdict's colour
	Broken                                                                bool
}

func (r *Report) rows() []row {
	var out []row
	ttl := r.TTL.D()
	for _, e := range r.Experiments {
		rw := row{Point: orDash(e.Point), Fault: e.Fault, Status: e.Status}
		switch e.Status {
		case StatusNA:
			rw.Verdict, rw.Cat, rw.Note = "n/a", "unknown", e.Skipped
		case StatusNotExplored:
			rw.Verdict, rw.Cat, rw.Note = "not explored", "unknown", "budget spent"
		default:
			best := e.Best()
			rw.Verdict, rw.Class, rw.Broken = string(e.Run.Verdict), e.Run.Class, e.Run.broke()
			rw.Cat = rw.Verdict
			if rw.Class != "" {
				rw.Cat = rw.Verdict + "-" + rw.Class
			}
			rw.Min = r.MinText(e)
			if e.AcquireToPointMs != nil && rw.Min != "" && r.SessionTimeout == 0 {
				left := float64(ttl.Microseconds())/1000 - *e.AcquireToPointMs
				rw.Note = fmt.Sprintf("lease left at the point: TTL − acquire→point = %.0fms", left)
			}
			if e.Shrink != nil && e.Shrink.Stopped != "" {
				rw.Note = strings.TrimPrefix(rw.Note+"; shrink stopped: "+e.Shrink.Stopped, "; ")
			}
			if e.Param != "" && !rw.Broken {
				rw.Note = fmt.Sprintf("tried %s %s", e.Param, e.Tried)
			}
			rw.TTD = fmtTTD(best.TTDMs)
			rw.Command, rw.Report = best.Command, best.Report
			if best.Error != "" {
				rw.Note = strings.TrimPrefix(rw.Note+"; run ended early: "+best.Error, "; ")
			}
		}
		out = append(out, rw)
	}
	return out
}

// fmtTTD prints a time to detection, "–" for none.
func fmtTTD(p *float64) string {
	if p == nil {
		return "–"
	}
	return history.FormatMs(*p)
}

// WriteTable prints the report as a table: point, fault, verdict, class, minimum, TTD, report and
// re-run command, then what was not explored.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POINT\tFAULT\tVERDICT\tCLASS\tMINIMUM\tTTD\tREPORT\tRE-RUN")
	var skipped []string
	for _, rw := range r.rows() {
		if rw.Status == StatusNA {
			skipped = append(skipped, fmt.Sprintf("%s at %s (%s)", rw.Fault, rw.Point, rw.Note))
			continue
		}
		min := rw.Min
		if rw.Note != "" && rw.Broken {
			min = strings.TrimSpace(min + " (" + rw.Note + ")")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", rw.Point, rw.Fault, rw.Verdict, orDash(rw.Class),
			orDash(min), rw.TTD, orDash(rw.Report), orDash(rw.Command))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d pairs explored, %d unsafe, %d stuck, %d not explored, %d not shrunk; %d runs in %s (budget %s); TTL %s\n",
		r.Algorithm, r.Explored, r.Unsafe, r.Stuck, r.NotExplored, r.NotShrunk, r.Runs,
		(time.Duration(r.ElapsedMs) * time.Millisecond).Round(time.Second), r.Budget, r.TTL)
	if r.NotExplored > 0 {
		var ne []string
		for _, e := range r.Experiments {
			if e.Status == StatusNotExplored {
				ne = append(ne, orDash(e.Point)+" × "+e.Fault)
			}
		}
		fmt.Fprintf(w, "not explored (budget spent): %s\n", strings.Join(ne, ", "))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(w, "not applicable: %s\n", strings.Join(dedupe(skipped), "; "))
	}
	return nil
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// view is what the page template renders.
type view struct {
	R           *Report
	CSS         template.CSS
	Rows        []row
	Elapsed     string
	NotExplored []string
}

func (r *Report) view() view {
	v := view{R: r, CSS: reports.Style(), Rows: r.rows(),
		Elapsed: (time.Duration(r.ElapsedMs) * time.Millisecond).Round(time.Second).String()}
	for _, e := range r.Experiments {
		if e.Status == StatusNotExplored {
			v.NotExplored = append(v.NotExplored, orDash(e.Point)+" × "+e.Fault)
		}
	}
	return v
}

// acquireToPoint reads a pause run's history: how long after its Acquire call the paused client
// reached the point (nil when the pause did not fire).
func acquireToPoint(dir string) *float64 {
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return nil
	}
	last := map[int]int64{} // client → at_ns of its latest acquire call
	for _, e := range h.Events {
		switch {
		case e.Type == history.TypeInvoke && e.Op == history.OpAcquire:
			last[e.Client] = e.AtNs
		case e.Type == history.TypeFault && e.Phase == history.PhaseStart && e.Name == KindPause:
			var c int
			if _, err := fmt.Sscanf(e.Target, "client-%d", &c); err != nil {
				return nil
			}
			at, ok := last[c]
			if !ok {
				return nil
			}
			v := float64(e.AtNs-at) / 1e6
			return &v
		}
	}
	return nil
}
