package reports

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// AnalysisFile is the page `lockchaos analyze` writes: one lock under every scenario.
const AnalysisFile = "analysis.html"

// AnalysisMeta describes an analysis: the lock, how it was run, and what the catalogue (or a
// scenario file) says of each scenario.
type AnalysisMeta struct {
	Algorithm string
	Summary   string // what the lock is (the algorithm's summary)
	Source    string // where it comes from: a library and its version, an article
	Command   string
	Backend   string
	Version   string // lockchaos's
	Seed      int64
	Runs      int // runs per scenario
	Started   time.Time
	Elapsed   time.Duration
	// Scenarios are in the page's order; a scenario the cells do not mention is left out.
	Scenarios []AnalysisScenario
}

// AnalysisScenario is what is known of one scenario before the runs: what it does, the failure
// it reproduces, and the expectation's comment for this lock (why it should come out so).
type AnalysisScenario struct {
	Name       string
	Summary    string
	Reproduces string
	Why        string
	File       string // the scenario file it comes from; "" for the catalogue
}

type analysisPage struct {
	CSS      any
	Meta     AnalysisMeta
	Started  string
	Elapsed  string
	Verdicts []verdictCount
	Rows     []analysisRow
	Findings []analysisRow
	NA       []analysisRow
	Matched  int
	Judged   int
}

type analysisRow struct {
	AnalysisScenario
	Anchor   string
	Cat      string // the worst category of its runs
	Tally    string // "3 of 3 unsafe-client"
	Expected string
	Judged   int
	Matched  int
	Runs     []gridRun
	Links    []string // the published sources the comment and the scenario cite
	NA       string
	// The first violation of the worst run, for findings.
	First    *checker.Violation
	TTD      string
	Lost     int
	Report   string
	Explain  string
	Evidence string
}

var (
	urlRE       = regexp.MustCompile(`https?://[^\s)>\]"']+`)
	emptyParens = regexp.MustCompile(`\s*\(\s*\)`)
)

// WriteAnalysis writes analysis.html into outDir: per scenario the runs' verdicts against the
// expectation and why, the findings (unsafe and stuck scenarios) with their first violation, the
// published source each confirms, and what to do about its class of failure; links go to each
// run's report.
func WriteAnalysis(outDir string, cells []Cell, meta AnalysisMeta) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	p := buildAnalysisPage(cells, meta)
	return writeAtomic(filepath.Join(outDir, AnalysisFile), func(w io.Writer) error {
		return pageTemplates.ExecuteTemplate(w, "analysis.html", p)
	})
}

func buildAnalysisPage(cells []Cell, meta AnalysisMeta) *analysisPage {
	p := &analysisPage{CSS: styleCSS, Meta: meta}
	if !meta.Started.IsZero() {
		p.Started = meta.Started.UTC().Format("2006-01-02 15:04 MST")
	}
	if meta.Elapsed > 0 {
		p.Elapsed = meta.Elapsed.Round(time.Second).String()
	}
	byScen := map[string][]*Cell{}
	for i := range cells {
		byScen[cells[i].Scenario] = append(byScen[cells[i].Scenario], &cells[i])
	}
	counts := map[string]int{}
	for _, s := range meta.Scenarios {
		runs := byScen[s.Name]
		if len(runs) == 0 {
			continue
		}
		row := analysisRow{AnalysisScenario: s, Anchor: "s-" + s.Name, Links: urlRE.FindAllString(s.Why+" "+s.Reproduces, -1)}
		// The sources are shown as links under the comment: once is enough.
		row.Why = strings.TrimSpace(emptyParens.ReplaceAllString(urlRE.ReplaceAllString(s.Why, ""), ""))
		if runs[0].NA != "" {
			row.NA, row.Cat = runs[0].NA, catNA
			p.NA = append(p.NA, row)
			continue
		}
		var worst *Cell
		byCat := map[string]int{}
		for _, c := range runs {
			st := stateOf(c)
			byCat[st.cat]++
			row.Expected = st.expected
			if st.judged {
				row.Judged++
				if st.match {
					row.Matched++
				}
			}
			href := ""
			if c.Dir != "" {
				href = path.Join(filepath.ToSlash(c.Dir), "report.html")
			}
			detail := c.Err
			if c.Result != nil && detail == "" {
				detail = cellDetail(c.Result)
			}
			row.Runs = append(row.Runs, gridRun{Href: href, Cat: st.cat, Detail: detail,
				Title: fmt.Sprintf("seed %d", seedOf(c))})
			if worst == nil || catRank(st.cat) > catRank(stateOf(worst).cat) {
				worst = c
			}
		}
		row.Cat = stateOf(worst).cat
		row.Tally = fmt.Sprintf("%d of %d %s", byCat[row.Cat], len(runs), row.Cat)
		counts[row.Cat]++
		p.Judged += row.Judged
		p.Matched += row.Matched
		if r := worst.Result; r != nil {
			row.First, row.Lost, row.Evidence = r.FirstViolation, r.LostUpdates, r.Evidence
			if r.TTDMs != nil {
				row.TTD = history.FormatMs(*r.TTDMs)
			}
		}
		if worst.Dir != "" {
			row.Report = path.Join(filepath.ToSlash(worst.Dir), "report.html")
		}
		row.Explain = classExplanation(row.Cat)
		p.Rows = append(p.Rows, row)
		if strings.HasPrefix(row.Cat, catUnsafe) || row.Cat == catStuck {
			p.Findings = append(p.Findings, row)
		}
	}
	for _, cat := range []string{catUnsafeService, catUnsafeClient, catUnsafe, catStuck, catUnknown, catSafe} {
		if counts[cat] > 0 {
			p.Verdicts = append(p.Verdicts, verdictCount{Cat: cat, N: counts[cat]})
		}
	}
	if len(p.NA) > 0 {
		p.Verdicts = append(p.Verdicts, verdictCount{Cat: catNA, N: len(p.NA)})
	}
	return p
}

func seedOf(c *Cell) int64 {
	if c.Result != nil {
		return c.Result.Seed
	}
	return 0
}
