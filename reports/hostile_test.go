package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

const evil = `<script>alert(1)</script>`

// hostileRun puts markup in every string a user or a server can influence.
func hostileRun(t *testing.T) (*history.History, *checker.Outcome) {
	h, out := pauseRun()
	h.Meta.Scenario = "pause" + evil
	h.Meta.Command = "lockchaos run --scenario '" + evil + "'"
	h.Warnings = append(h.Warnings, evil)
	for i := range h.Events {
		e := &h.Events[i]
		if e.Type == history.TypeFault && e.Phase == history.PhaseStart {
			e.Target = "client-1" + evil
			e.Detail = evil
		}
		if e.Type == history.TypeFault && e.Phase == history.PhaseEnd {
			e.Error = "heal failed: " + evil
		}
		if e.Type == history.TypeFail {
			e.Error = evil
		}
	}
	out.Result.Scenario = "pause" + evil
	out.Result.FaultErrors = []string{evil}
	out.Result.Warnings = []string{`"><img src=x onerror=alert(1)>`}
	out.Result.FirstViolation.Explanation = evil
	ops := []porcupine.Operation{{ClientId: 1, Input: [2]int{1, 1}, Call: 1, Output: 0, Return: 2}}
	_, info := porcupine.CheckOperationsVerbose(registerModel, ops, 0)
	out.Lock = &checker.Linearization{Model: registerModel, Info: info}
	return h, out
}

func TestHostileNamesAreEscaped(t *testing.T) {
	dir := t.TempDir()
	h, out := hostileRun(t)
	if err := WriteRun(dir, h.Run(), out); err != nil {
		t.Fatal(err)
	}
	cells := []Cell{
		{Scenario: "pause" + evil, Algorithm: "token" + evil, Dir: "x/" + evil, Result: &out.Result, Expected: evil},
		{Scenario: "pause" + evil, Algorithm: "zk", NA: evil},
	}
	if err := WriteMatrix(dir, cells, MatrixMeta{Title: evil, Command: evil, Algorithms: []string{evil}}); err != nil {
		t.Fatal(err)
	}
	files := []string{ReportFile, LinearizabilityFile, ResourceLinearizability, IndexFile, JUnitFile, ResultsFile}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if strings.Contains(strings.ToLower(s), "<script>alert") {
			t.Errorf("%s contains a raw <script>alert", f)
		}
		if strings.Contains(s, "<img src=x") {
			t.Errorf("%s contains a raw <img>", f)
		}
	}
	report := readFile(t, filepath.Join(dir, ReportFile))
	for _, want := range []string{
		"pause&lt;script&gt;alert(1)&lt;/script&gt;",         // scenario in the header
		"client-1&lt;script&gt;alert(1)&lt;/script&gt;",      // fault target in the table
		"heal failed: &lt;script&gt;alert(1)&lt;/script&gt;", // error string
		"&#39;&lt;script&gt;alert(1)&lt;/script&gt;&#39;",    // command
		"&#34;&gt;&lt;img src=x onerror=alert(1)&gt;",        // warning
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report.html lacks escaped %q", want)
		}
	}
	if index := readFile(t, filepath.Join(dir, IndexFile)); !strings.Contains(index, "token&lt;script&gt;") {
		t.Errorf("index.html lacks the escaped algorithm name")
	}
	if lin := readFile(t, filepath.Join(dir, LinearizabilityFile)); !strings.Contains(lin, `client-1\u003cscript\u003ealert(1)\u003c/script\u003e`) {
		t.Errorf("linearizability.html lacks the JSON-escaped fault target")
	}
}
