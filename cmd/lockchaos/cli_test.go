package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelp: every command's -h prints its synopsis and its own flags with their defaults on
// stdout and exits 0; `help CMD` is the same; `help` lists every command.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"run", []string{"usage: lockchaos run", "-algorithm", "-duration", "-expect", `(default "local")`, `(default "` + defaultOut + `")`, `(default "baseline")`}},
		{"matrix", []string{"usage: lockchaos matrix", "-shard", "-parallel", "(default 1)", "-json"}},
		{"explore", []string{"usage: lockchaos explore", "-budget", "(default 5m0s)"}},
		{"list", []string{"usage: lockchaos list", "-json"}},
		{"check", []string{"usage: lockchaos check", "-write", "-json"}},
		{"doctor", []string{"usage: lockchaos doctor", "-clean"}},
		{"serve", []string{"usage: lockchaos serve", "-addr", `(default "127.0.0.1:8080")`}},
		{"merge", []string{"usage: lockchaos merge OUT DIR..."}},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			code, out, errOut := lockchaos(t, tc.cmd, "-h")
			if code != exitValid || errOut != "" {
				t.Fatalf("%s -h: exit %d, stderr %q", tc.cmd, code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s -h does not say %q:\n%s", tc.cmd, w, out)
				}
			}
			if _, out2, _ := lockchaos(t, "help", tc.cmd); out2 != out {
				t.Errorf("help %s differs from %s -h", tc.cmd, tc.cmd)
			}
		})
	}
	code, out, _ := lockchaos(t, "help")
	if code != exitValid {
		t.Fatalf("help: exit %d", code)
	}
	for _, c := range commands {
		if !strings.Contains(out, "lockchaos "+c) {
			t.Errorf("help does not list %s", c)
		}
	}
	if strings.Contains(out, "--out reports") {
		t.Error("help still names reports/ as the output folder")
	}
	_, _, errOut := lockchaos(t, "frobnicate")
	for _, c := range commands {
		if !strings.Contains(errOut, c) {
			t.Errorf("the unknown-command message does not list %s: %q", c, errOut)
		}
	}
}

// TestRefusedFlags: commands that do not run cells refuse the flags of those that do.
func TestRefusedFlags(t *testing.T) {
	for _, args := range [][]string{
		{"list", "--duration", "1s"},
		{"doctor", "--seed", "1"},
		{"serve", "--clients", "2"},
		{"check", "--backend", "docker", "somewhere"},
		{"merge", "--algorithms", "token", "a", "b"},
	} {
		code, _, errOut := lockchaos(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "flag provided but not defined") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 254 and one line", args, code, errOut)
		}
	}
}

// TestErrorNamesProgramOnce: an error from a package whose errors start with "lockchaos: " is
// still printed with the program's name once.
func TestErrorNamesProgramOnce(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, _, errOut := lockchaos(t, "run", "--algorithm", "token", "--out", t.TempDir(), "--quiet")
	if n := strings.Count(errOut, "lockchaos:"); n != 1 {
		t.Errorf("stderr names the program %d times: %q", n, errOut)
	}
}

// writeHistory saves a run directory whose history holds only its meta line.
func writeHistory(t *testing.T, meta string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(meta+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCheckExit: check exits by the run's recorded expectation when it has one, by verdict when
// not, and says which; it writes nothing unless --write.
func TestCheckExit(t *testing.T) {
	const meta = `{"type":"meta","algorithm":"token","scenario":"baseline","backend":"local","seed":1,"clients":2,"ttl_ns":500000000,"started":"2026-11-23T00:00:00Z","version":"t"`
	// No operations: the verdict is unknown (exit 2 by verdict).
	noExpect := writeHistory(t, meta+`}`)
	code, _, errOut := lockchaos(t, "check", noExpect)
	if code != exitUnknown || !strings.Contains(errOut, "exit 2 by verdict") {
		t.Errorf("no expectation: exit %d, stderr %q; want 2 by verdict", code, errOut)
	}
	met := writeHistory(t, meta+`,"expected":"unknown"}`)
	code, out, errOut := lockchaos(t, "check", met)
	if code != exitValid || !strings.Contains(errOut, "by the run's recorded expectation, unknown") || !strings.Contains(out, "[as expected]") {
		t.Errorf("expectation met: exit %d, stdout %q, stderr %q; want 0 by expectation", code, out, errOut)
	}
	missed := writeHistory(t, meta+`,"expected":"safe"}`)
	if code, _, errOut := lockchaos(t, "check", "--json", missed); code != exitInvalid || !strings.Contains(errOut, "exit 1 by the run's recorded expectation, safe") {
		t.Errorf("expectation missed: exit %d, stderr %q; want 1 by expectation", code, errOut)
	}
	for _, d := range []string{noExpect, met, missed} {
		if entries, _ := os.ReadDir(d); len(entries) != 1 {
			t.Errorf("check without --write wrote into the run: %d files", len(entries))
		}
	}
	if code, _, errOut := lockchaos(t, "check", met, "--write"); code != exitValid {
		t.Fatalf("check --write: exit %d %s", code, errOut)
	}
	for _, f := range []string{"result.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(met, f)); err != nil {
			t.Errorf("check --write (given after DIR) wrote no %s: %v", f, err)
		}
	}
}

// TestMatrixJSONAndMerge: a matrix of n/a cells needs no servers. Its --json is the results.json
// document with the plan; two shards of it merge into the whole, one alone fails naming the
// missing cells.
func TestMatrixJSONAndMerge(t *testing.T) {
	root := t.TempDir()
	args := []string{"matrix", "--algorithms", "token,setnx,setnx-px", "--scenarios", "getset-race,zk-leader-kill", "--json", "--seed", "4"}
	code, out, errOut := lockchaos(t, append(args, "--out", filepath.Join(root, "whole"))...)
	if code != exitValid {
		t.Fatalf("matrix: exit %d, %s", code, errOut)
	}
	var doc struct {
		Plan struct {
			Algorithms []string `json:"algorithms"`
			Shards     int      `json:"shards"`
			Catalogue  string   `json:"catalogue"`
		} `json:"plan"`
		Summary struct {
			NA int `json:"na"`
		} `json:"summary"`
		Results []struct{ Scenario, Algorithm, Verdict string } `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("matrix --json printed no JSON document: %v\n%s", err, out)
	}
	if len(doc.Results) != 6 || doc.Summary.NA != 6 || len(doc.Plan.Algorithms) != 3 || doc.Plan.Shards != 1 || doc.Plan.Catalogue == "" {
		t.Errorf("matrix --json: %+v", doc)
	}
	var shards []string
	for _, sh := range []string{"1/2", "2/2"} {
		d := filepath.Join(root, "shard"+sh[:1])
		if code, _, errOut := lockchaos(t, append(args, "--shard", sh, "--out", d, "--quiet")...); code != exitValid {
			t.Fatalf("shard %s: exit %d %s", sh, code, errOut)
		}
		shards = append(shards, d)
	}
	merged := filepath.Join(root, "merged")
	code, out, errOut = lockchaos(t, "merge", merged, shards[0], shards[1])
	if code != exitValid || !strings.Contains(out, "merged 2 shards: 0 runs (6 n/a)") {
		t.Fatalf("merge: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	b, _ := os.ReadFile(filepath.Join(merged, "results.json"))
	var whole, got map[string]any
	wb, _ := os.ReadFile(filepath.Join(root, "whole", "results.json"))
	json.Unmarshal(wb, &whole)
	json.Unmarshal(b, &got)
	// The same cells in the same order; only where each run lives differs.
	for _, doc := range []map[string]any{whole, got} {
		for _, r := range doc["results"].([]any) {
			delete(r.(map[string]any), "dir")
		}
	}
	if w, g := whole["results"], got["results"]; !jsonEqual(w, g) {
		t.Errorf("merged results\n%v\nwant the whole matrix's\n%v", g, w)
	}
	code, _, errOut = lockchaos(t, "merge", filepath.Join(root, "half"), shards[0])
	if code != exitUsage || !strings.Contains(errOut, "are in no shard") || !strings.Contains(errOut, "shard 2/2") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("merge of one shard of two: exit %d, stderr %q; want 254 naming the missing cells", code, errOut)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
