package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// The JUnit XML subset CI systems read: one testsuite, one testcase per cell and run.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// writeJUnit writes one testcase per cell (classname = scenario, name = algorithm, "#run" added
// for repeated runs). A cell fails when it differs from its expectation; a cell without one
// fails unless it is safe, so CI never passes an unsafe run silently. n/a cells are skipped.
func writeJUnit(w io.Writer, cells []Cell, meta MatrixMeta) error {
	suite := junitSuite{Name: "lockchaos"}
	if meta.Title != "" {
		suite.Name = meta.Title
	}
	total := 0.0
	for i := range cells {
		c := &cells[i]
		st := stateOf(c)
		tc := junitCase{Classname: c.Scenario, Name: c.Algorithm, Time: "0"}
		if c.Run > 0 {
			tc.Name = fmt.Sprintf("%s#%d", c.Algorithm, c.Run)
		}
		if c.Result != nil {
			secs := c.Result.DurationMs / 1000
			total += secs
			tc.Time = fmt.Sprintf("%.3f", secs)
		}
		observed := st.cat
		switch {
		case c.NA != "":
			tc.Skipped = &junitMessage{Message: c.NA}
			suite.Skipped++
		case c.Err != "":
			tc.Error = &junitMessage{Message: "harness error", Type: "error", Text: c.Err}
			suite.Errors++
		case st.judged && !st.match:
			tc.Failure = &junitMessage{Message: fmt.Sprintf("expected %s, observed %s", st.expected, observed), Type: "mismatch",
				Text: failureText(c, st)}
			suite.Failures++
		case !st.judged && observed != catSafe && !expectsNA(st.expected):
			tc.Failure = &junitMessage{Message: fmt.Sprintf("no expectation, observed %s", observed), Type: "unexpected",
				Text: failureText(c, st)}
			suite.Failures++
		}
		if c.Dir != "" {
			tc.SystemOut = "report: " + strings.TrimSuffix(c.Dir, "/") + "/" + ReportFile
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Tests = len(suite.Cases)
	suite.Time = fmt.Sprintf("%.3f", total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{suite}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func failureText(c *Cell, st cellState) string {
	var b strings.Builder
	exp := st.expected
	if exp == "" {
		exp = "(none)"
	}
	fmt.Fprintf(&b, "%s × %s: expected %s, observed %s\n", c.Algorithm, c.Scenario, exp, st.cat)
	if r := c.Result; r != nil {
		fmt.Fprintf(&b, "decided by: %s\nevidence: %s\n", r.DecidedBy, r.Evidence)
		fmt.Fprintf(&b, "exclusion violations %d, service violations %d, lost updates %d, longest stall %s\n",
			r.ExclusionViolations, r.ServiceViolations, r.LostUpdates, history.FormatMs(r.LongestStallMs))
		if v := r.FirstViolation; v != nil {
			fmt.Fprintf(&b, "first violation: %s (%s) at %s: %s\n", v.Kind, v.Class, history.FormatMs(v.AtMs), v.Explanation)
		}
	}
	return b.String()
}
