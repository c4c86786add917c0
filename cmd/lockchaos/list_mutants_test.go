package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestListMutants: mutants are hidden from `list` and shown by `list --mutants`, in text and
// JSON, each with the algorithm it breaks, what is removed and the scenarios that must catch it.
func TestListMutants(t *testing.T) {
	_, plain, _ := lockchaos(t, "list")
	if strings.Contains(plain, "token-plain-del") {
		t.Error("plain `list` shows the mutant token-plain-del")
	}
	code, text, _ := lockchaos(t, "list", "--mutants")
	if code != 0 || !strings.Contains(text, "MUTANT") || !strings.Contains(text, "token-plain-del") {
		t.Errorf("list --mutants: exit %d, no mutant table:\n%s", code, text)
	}
	code, out, _ := lockchaos(t, "list", "--mutants", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var l listing
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatal(err)
	}
	byName := map[string]listedMutant{}
	for _, m := range l.Mutants {
		byName[m.Name] = m
		if m.Breaks == "" || m.Removed == "" || len(m.CaughtBy) == 0 {
			t.Errorf("mutant %+v: want breaks, removed and must_be_caught_by", m)
		}
	}
	m, ok := byName["redlock-no-quorum"]
	if !ok || m.Breaks != "redlock" {
		t.Fatalf("redlock-no-quorum listed as %+v", m)
	}
	found := false
	for _, c := range m.CaughtBy {
		found = found || (c.Scenario == "node-kill" && strings.HasPrefix(c.Expect, "Us"))
	}
	if !found {
		t.Errorf("redlock-no-quorum caught by %+v, want node-kill with Us", m.CaughtBy)
	}
	for _, a := range l.Algorithms {
		if _, isMutant := byName[a.Name]; isMutant {
			t.Errorf("mutant %s listed among the algorithms", a.Name)
		}
	}
}
