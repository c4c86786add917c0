package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/checker"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteRunUnsafe(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "client-pause", "token")
	h, out := pauseRun()
	if err := WriteRun(dir, h.Run(), out); err != nil {
		t.Fatal(err)
	}
	var got checker.Result
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, ResultFile))), &got); err != nil {
		t.Fatalf("result.json: %v", err)
	}
	if got.Verdict != checker.Unsafe || got.FirstViolation == nil || got.FirstViolation.A.ID != out.Result.FirstViolation.A.ID {
		t.Errorf("result.json does not round-trip: %+v", got)
	}
	if raw := readFile(t, filepath.Join(dir, ResultFile)); !strings.Contains(raw, "\n  \"algorithm\": \"token\"") {
		t.Errorf("result.json is not indented:\n%.200s", raw)
	}
	page := readFile(t, filepath.Join(dir, ReportFile))
	for _, want := range []string{
		`id="first-violation"`, `class="badge v-unsafe-client"`, "✓ matches", "after it expired",
		"client 1 and client 2 both held the lock", "lockchaos run --algorithm token --scenario client-pause --seed 42",
		"client-pause → client-1", "acquire latency (log scale)", "Illegal in 2.1 ms", "fencing tokens",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if n := strings.Count(page, `id="first-violation"`); n != 1 {
		t.Errorf("%d first-violation markers, want 1", n)
	}
	if strings.Contains(page, "http://") && !strings.Contains(page, `xmlns="http://www.w3.org/2000/svg"`) || strings.Contains(page, "https://") || strings.Contains(page, "<script src") || strings.Contains(page, "<link") {
		t.Errorf("report.html refers to the network")
	}
	// No checks ran with porcupine info in this outcome: both pages explain why.
	for _, f := range []string{LinearizabilityFile, ResourceLinearizability} {
		p := readFile(t, filepath.Join(dir, f))
		if !strings.Contains(p, `id="no-linearization"`) {
			t.Errorf("%s is not the notice page", f)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestWriteRunSafe(t *testing.T) {
	dir := t.TempDir()
	h, out := safeRun()
	if err := WriteRun(dir, h.Run(), out); err != nil {
		t.Fatal(err)
	}
	page := readFile(t, filepath.Join(dir, ReportFile))
	if strings.Contains(page, `id="first-violation"`) {
		t.Errorf("safe report has a first-violation marker")
	}
	if !strings.Contains(page, `class="badge v-safe"`) || !strings.Contains(page, "No faults were injected") {
		t.Errorf("safe report lacks its badge or fault note")
	}
}

// registerModel is a tiny porcupine model for the visualization tests.
var registerModel = porcupine.Model{
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		in := input.([2]int)
		if in[0] == 1 { // write
			return true, in[1]
		}
		return output.(int) == state.(int), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.([2]int)
		if in[0] == 1 {
			return "write " + string(rune('0'+in[1]))
		}
		return "read → " + string(rune('0'+output.(int)))
	},
	DescribeState: func(s any) string { return "<b>" + string(rune('0'+s.(int))) + "</b>" },
}

func TestLinearizabilityPage(t *testing.T) {
	ops := []porcupine.Operation{
		{ClientId: 1, Input: [2]int{1, 1}, Call: 10 * ms, Output: 0, Return: 20 * ms},
		{ClientId: 2, Input: [2]int{0, 0}, Call: 30 * ms, Output: 1, Return: 40 * ms},
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, ops, time.Second)
	if res != porcupine.Ok {
		t.Fatalf("check: %v", res)
	}
	h, out := pauseRun()
	out.Lock = &checker.Linearization{Model: registerModel, Info: info}
	dir := t.TempDir()
	if err := WriteRun(dir, h.Run(), out); err != nil {
		t.Fatal(err)
	}
	p := readFile(t, filepath.Join(dir, LinearizabilityFile))
	for _, want := range []string{`"Tag":"fault client-1"`, `"Description":"client-pause"`, `"Tag":"first violation"`, "write 1"} {
		if !strings.Contains(p, want) {
			t.Errorf("linearizability.html lacks %q", want)
		}
	}
	// State descriptions go through innerHTML in porcupine's page: they must arrive escaped.
	if strings.Contains(p, `\u003cb\u003e`) || !strings.Contains(p, `\u0026lt;b\u0026gt;`) {
		t.Errorf("state description not HTML-escaped")
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, ResourceLinearizability)), `id="no-linearization"`) {
		t.Errorf("resource page should be the notice page")
	}
}

func TestWriteRunNeedsInputs(t *testing.T) {
	if err := WriteRun(t.TempDir(), nil, nil); err == nil {
		t.Fatal("WriteRun(nil, nil) succeeded")
	}
}

func TestNoticeReasons(t *testing.T) {
	h, out := safeRun()
	out.Result.LockCheck = checker.Check{Result: "Unknown", Ms: 10000}
	out.Result.ResourceCheck = checker.Check{}
	dir := t.TempDir()
	if err := WriteRun(dir, h.Run(), out); err != nil {
		t.Fatal(err)
	}
	if p := readFile(t, filepath.Join(dir, LinearizabilityFile)); !strings.Contains(p, "timed out after 10 s") {
		t.Errorf("lock notice lacks the timeout: %s", p)
	}
	if p := readFile(t, filepath.Join(dir, ResourceLinearizability)); !strings.Contains(p, "did not run") {
		t.Errorf("resource notice lacks the reason")
	}
}
