package reports

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// Matrix output files (docs/design.md#command-line-contract).
const (
	IndexFile   = "index.html"
	ResultsFile = "results.json"
	JUnitFile   = "junit.xml"
)

// Cell is one run of one algorithm under one scenario, as the matrix shows it.
type Cell struct {
	Scenario  string
	Algorithm string
	// Run numbers repeated runs of the same cell from 1; 0 when the cell ran once.
	Run int
	// Dir is the run directory relative to the matrix's output directory; its report.html is linked.
	Dir    string
	Result *checker.Result
	// NA, when set, says why the cell does not apply (e.g. "failover needs a replica").
	NA string
	// Expected is the catalogue's expectation: safe, unsafe-service, unsafe-client, unsafe, stuck
	// (or S, Us, Uc, X); "" means use the Result's own expected field.
	Expected string
	// Err is a harness error that kept the run from producing a result.
	Err string
}

// MatrixMeta describes a matrix run. All fields are optional.
type MatrixMeta struct {
	Title   string
	Command string // the command line that re-runs the whole matrix
	Backend string
	Version string
	Seed    int64
	Started time.Time
	// Algorithms and Scenarios fix the order of the grid; missing names are appended in the
	// order the cells mention them.
	Algorithms []string
	Scenarios  []string
	// Plan, when set, is recorded in results.json so shards can be merged (lockchaos merge).
	Plan *Plan
	// Page is the file name of the grid page (default index.html; the selftest writes
	// selftest.html).
	Page string
}

// WriteMatrix writes index.html, results.json and junit.xml into outDir, each atomically.
func WriteMatrix(outDir string, cells []Cell, meta MatrixMeta) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	sum := Summarize(cells)
	return errors.Join(
		writeJSONAtomic(filepath.Join(outDir, ResultsFile), resultsDoc(cells, meta, sum)),
		writeAtomic(filepath.Join(outDir, JUnitFile), func(w io.Writer) error { return writeJUnit(w, cells, meta) }),
		writeAtomic(filepath.Join(outDir, cmp.Or(meta.Page, IndexFile)), func(w io.Writer) error {
			return pageTemplates.ExecuteTemplate(w, "index.html", buildMatrixPage(cells, meta, sum))
		}),
	)
}

// cellState is what a cell shows and how it is judged.
type cellState struct {
	cat      string // category, or n/a
	expected string
	judged   bool // there was an expectation to compare against, or a harness error
	match    bool
}

// stateOf judges a cell (Judge). A cell with a harness error is never matched: it is judged, and
// a mismatch, whatever its result and expectation say.
func stateOf(c *Cell) cellState {
	if c.NA != "" {
		return cellState{cat: catNA, expected: c.Expected, judged: false, match: true}
	}
	s := cellState{cat: category(c.Result), expected: expectedOf(c.Expected, c.Result)}
	if c.Err != "" {
		s.cat, s.judged, s.match = catUnknown, true, false
		return s
	}
	s.match, s.judged = matchOf(s.expected, c.Result)
	return s
}

// Judge says how a cell stands against its expectation, by checker.Matches: judged is false for
// an n/a cell and for a run without an expectation (or expected n/a), match whether it met it. A
// cell with a harness error is judged, and never matched.
func Judge(c *Cell) (judged, match bool) {
	st := stateOf(c)
	return st.judged, st.judged && st.match
}

// Summary counts a matrix's cells (each run of a cell run more than once is one).
type Summary struct {
	Cells      int            `json:"cells"`
	Matched    int            `json:"matched"`
	Mismatched int            `json:"mismatched"`
	NoExpect   int            `json:"no_expectation"`
	NA         int            `json:"na"`
	ByVerdict  map[string]int `json:"by_verdict"`
}

// Summarize is the one count of a matrix's matched and mismatched cells: results.json's summary,
// the pages', and the matrix's, merge's and the selftest's exit codes.
func Summarize(cells []Cell) Summary {
	s := Summary{Cells: len(cells), ByVerdict: map[string]int{}}
	for i := range cells {
		st := stateOf(&cells[i])
		s.ByVerdict[st.cat]++
		switch {
		case cells[i].NA != "":
			s.NA++
		case !st.judged:
			s.NoExpect++
		case st.match:
			s.Matched++
		default:
			s.Mismatched++
		}
	}
	return s
}

type resultEntry struct {
	Scenario  string          `json:"scenario"`
	Algorithm string          `json:"algorithm"`
	Run       int             `json:"run,omitempty"`
	Dir       string          `json:"dir,omitempty"`
	Verdict   string          `json:"verdict"` // category: safe, unsafe-service, unsafe-client, stuck, unknown, n/a
	Expected  string          `json:"expected,omitempty"`
	Matches   *bool           `json:"matches_expectation,omitempty"`
	NA        string          `json:"na,omitempty"`
	Error     string          `json:"error,omitempty"`
	Result    *checker.Result `json:"result,omitempty"`
}

type resultsFile struct {
	Title   string        `json:"title,omitempty"`
	Command string        `json:"command,omitempty"`
	Backend string        `json:"backend,omitempty"`
	Version string        `json:"version,omitempty"`
	Seed    int64         `json:"seed,omitempty"`
	Started string        `json:"started,omitempty"`
	Plan    *Plan         `json:"plan,omitempty"`
	Summary Summary       `json:"summary"`
	Results []resultEntry `json:"results"`
}

func resultsDoc(cells []Cell, meta MatrixMeta, sum Summary) *resultsFile {
	doc := &resultsFile{Title: meta.Title, Command: meta.Command, Backend: meta.Backend, Version: meta.Version,
		Seed: meta.Seed, Plan: meta.Plan, Summary: sum, Results: []resultEntry{}}
	if !meta.Started.IsZero() {
		doc.Started = meta.Started.UTC().Format(time.RFC3339)
	}
	for i := range cells {
		c := &cells[i]
		st := stateOf(c)
		e := resultEntry{Scenario: c.Scenario, Algorithm: c.Algorithm, Run: c.Run, Dir: c.Dir, Verdict: st.cat,
			Expected: st.expected, NA: c.NA, Error: c.Err, Result: c.Result}
		if st.judged {
			m := st.match
			e.Matches = &m
		}
		doc.Results = append(doc.Results, e)
	}
	return doc
}

// matrixPage is what templates/index.html shows.
type matrixPage struct {
	CSS        template.CSS
	Meta       MatrixMeta
	Started    string
	Generated  string
	Summary    Summary
	Verdicts   []verdictCount
	Algorithms []string
	Rows       []matrixRow
	Props      []propRow
	PropNames  []string
}

type verdictCount struct {
	Cat string
	N   int
}

type matrixRow struct {
	Scenario string
	Cells    []gridCell
}

// gridCell is one algorithm × scenario square; with repeated runs it holds them all.
type gridCell struct {
	Key      string // data-cell value: "scenario/algorithm"
	Cat      string
	Class    string // CSS class: v-<category>
	Mismatch bool
	Expected string
	// Tally is "n/N": of a cell run more than once, how many runs met the expectation.
	Tally string
	Runs  []gridRun
	NA    string
	Empty bool
}

type gridRun struct {
	Href   string
	Cat    string
	Detail string
	Title  string
}

func buildMatrixPage(cells []Cell, meta MatrixMeta, sum Summary) *matrixPage {
	p := &matrixPage{CSS: styleCSS, Meta: meta, Summary: sum, Generated: time.Now().UTC().Format(time.RFC3339)}
	if p.Meta.Title == "" {
		p.Meta.Title = "lockchaos matrix"
	}
	if !meta.Started.IsZero() {
		p.Started = meta.Started.UTC().Format(time.RFC3339)
	}
	for _, cat := range []string{catSafe, catUnsafeService, catUnsafeClient, catUnsafe, catStuck, catUnknown, catNA} {
		if n := sum.ByVerdict[cat]; n > 0 {
			p.Verdicts = append(p.Verdicts, verdictCount{cat, n})
		}
	}
	algos := orderNames(meta.Algorithms, cells, func(c *Cell) string { return c.Algorithm })
	scens := orderNames(meta.Scenarios, cells, func(c *Cell) string { return c.Scenario })
	p.Algorithms = algos
	byKey := map[[2]string][]*Cell{}
	for i := range cells {
		c := &cells[i]
		k := [2]string{c.Scenario, c.Algorithm}
		byKey[k] = append(byKey[k], c)
	}
	for _, s := range scens {
		row := matrixRow{Scenario: s}
		for _, a := range algos {
			row.Cells = append(row.Cells, gridCellOf(s, a, byKey[[2]string{s, a}]))
		}
		p.Rows = append(p.Rows, row)
	}
	p.PropNames, p.Props = properties(algos, cells)
	return p
}

func gridCellOf(scen, algo string, runs []*Cell) gridCell {
	g := gridCell{Key: scen + "/" + algo}
	if len(runs) == 0 {
		g.Empty, g.Cat, g.Class = true, catNA, "v-na"
		g.NA = "not run"
		return g
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Run < runs[j].Run })
	worst := -1
	judged, matched := 0, 0
	for _, c := range runs {
		st := stateOf(c)
		g.Expected = st.expected
		if st.judged {
			judged++
			if st.match {
				matched++
			} else {
				g.Mismatch = true
			}
		}
		if c.NA != "" {
			g.NA = c.NA
		}
		if r := catRank(st.cat); r > worst {
			worst, g.Cat = r, st.cat
		}
		run := gridRun{Cat: st.cat}
		if c.Dir != "" && c.NA == "" {
			run.Href = path.Join(filepath.ToSlash(c.Dir), ReportFile)
		}
		switch {
		case c.NA != "":
			run.Detail = c.NA
		case c.Err != "":
			run.Detail = "error: " + c.Err
		case c.Result != nil:
			run.Detail = cellDetail(c.Result)
		}
		run.Title = fmt.Sprintf("%s × %s: %s", algo, scen, st.cat)
		if st.expected != "" {
			run.Title += ", expected " + st.expected
		}
		if c.Result != nil && c.Result.DecidedBy != "" {
			run.Title += " — " + c.Result.DecidedBy
		}
		g.Runs = append(g.Runs, run)
	}
	if len(runs) > 1 && judged > 0 {
		g.Tally = fmt.Sprintf("%d/%d", matched, judged)
	}
	g.Class = "v-" + cssCat(g.Cat)
	if g.Mismatch {
		g.Class += " mismatch"
	}
	return g
}

// catRank orders categories so a cell with several runs shows the worst one.
func catRank(cat string) int {
	switch cat {
	case catNA:
		return 0
	case catSafe:
		return 1
	case catUnknown:
		return 2
	case catStuck:
		return 3
	case catUnsafeClient:
		return 4
	}
	return 5 // unsafe, unsafe-service
}

func cssCat(cat string) string {
	if cat == catNA {
		return "na"
	}
	return cat
}

func cellDetail(r *checker.Result) string {
	s := ""
	if r.TTDMs != nil {
		s = "TTD " + history.FormatMs(*r.TTDMs)
	}
	if n := r.ExclusionViolations + r.ServiceViolations; n > 0 {
		if s != "" {
			s += " · "
		}
		s += fmt.Sprintf("%d excl / %d svc", r.ExclusionViolations, r.ServiceViolations)
	}
	if r.Verdict == checker.Stuck {
		s = "stall " + history.FormatMs(r.LongestStallMs)
	}
	if s == "" {
		// A verdict without a violation stands on its evidence (docs/design.md#evidence): show it.
		if r.Evidence == checker.EvidenceOK {
			s = fmt.Sprintf("evidence ok · %d writes, %d in danger", r.WritesOk, r.WritesInWindow)
		} else {
			s = "no evidence: " + r.Evidence
		}
	}
	return s
}

// orderNames returns the given names, then any other name the cells use, in order of appearance.
func orderNames(given []string, cells []Cell, name func(*Cell) string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range given {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for i := range cells {
		if n := name(&cells[i]); !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
