package soak

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/reports"
)

//go:embed templates/soak.html
var pageSource string

var page = template.Must(template.New("soak").Parse(pageSource))

// write writes soak.json and soak.html, each whole or not at all.
func (r *Report) write(dir string) error {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("soak: encode report: %w", err)
	}
	var html bytes.Buffer
	if err := page.Execute(&html, r.view()); err != nil {
		return fmt.Errorf("soak: render page: %w", err)
	}
	if err := reports.WriteFile(filepath.Join(dir, JSONFile), append(js, '\n')); err != nil {
		return err
	}
	return reports.WriteFile(filepath.Join(dir, HTMLFile), html.Bytes())
}

type view struct {
	R                  *Report
	CSS                template.CSS
	Title, Kinds, Time string
	Elapsed            string
	Algs               []algView
}

type algView struct {
	R                         *AlgorithmResult
	Cat, Verdict              string
	PerHour, PerFault         string
	Held, Stall, Live, ByKind string
	Report                    string
	Replayed                  string // "happened again", "did not happen again" or ""
	Groups                    []groupView
}

type groupView struct {
	G      Group
	At     string
	Faults []string
}

func (r *Report) view() view {
	v := view{R: r, CSS: reports.Style(), Kinds: strings.Join(r.Kinds, ", "),
		Time: history.FormatMs(r.TimeMs), Elapsed: history.FormatMs(r.ElapsedMs)}
	var names []string
	for i := range r.Algorithms {
		a := &r.Algorithms[i]
		names = append(names, a.Algorithm)
		av := algView{R: a, Cat: category(a), Verdict: string(a.Verdict),
			PerHour: a.PerHour.format(" /h"), PerFault: a.PerFault.format(""),
			Held: fmt.Sprintf("%.1f%%", 100*a.HeldShare), Stall: history.FormatMs(a.LongestStallMs), Live: "—"}
		if a.NotRun != "" {
			av.Verdict = "not run"
		}
		if a.Reproduced != nil {
			av.Replayed = map[bool]string{true: "happened again", false: "did not happen again"}[*a.Reproduced]
		}
		if a.Live.FirstViolationMs >= 0 {
			av.Live = history.FormatMs(a.Live.FirstViolationMs)
		}
		if a.Dir != "" {
			av.Report = path.Join(a.Dir, "report.html")
		}
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(a.ByKind)) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, a.ByKind[k]))
		}
		av.ByKind = strings.Join(kinds, ", ")
		if av.ByKind == "" {
			av.ByKind = "none"
		}
		for _, g := range a.Groups {
			gv := groupView{G: g, At: history.FormatMs(g.First.AtMs)}
			for i, f := range g.Faults {
				gv.Faults = append(gv.Faults, describe(g.Names[i], f))
			}
			av.Groups = append(av.Groups, gv)
		}
		v.Algs = append(v.Algs, av)
	}
	v.Title = strings.Join(names, " · ")
	return v
}

// describe is one fault occurrence as the page lists it, by its name in the plan.
func describe(name string, f checker.FiredFault) string {
	s := name
	if name != f.Kind {
		s += " (" + f.Kind + ")"
	}
	if f.Point != "" {
		s += " at " + f.Point
	}
	if f.Target != "" {
		s += " on " + f.Target
	}
	end := "never healed"
	if f.EndMs >= 0 {
		end = "healed at " + history.FormatMs(f.EndMs)
	}
	return fmt.Sprintf("%s, from %s, %s", s, history.FormatMs(f.AtMs), end)
}

// category is the badge colour of a verdict.
func category(a *AlgorithmResult) string {
	switch {
	case a.NotRun != "":
		return "unknown"
	case strings.HasPrefix(string(a.Verdict), "unsafe"):
		return "unsafe"
	}
	return string(a.Verdict)
}
