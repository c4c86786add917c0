package scenarios_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestTeeth: docs/design.md#mutants — every scenario names a mutant it catches, every mutant is caught
// somewhere, and each catch resolves to a cell with an unsafe or stuck expectation on the mutant's
// real algorithm's topology.
func TestTeeth(t *testing.T) {
	caught := map[string]bool{}
	for _, s := range scenarios.All() {
		if len(s.Catches) == 0 {
			t.Errorf("%s catches no mutant", s.Name)
		}
		for m := range s.Catches {
			info, err := algorithms.Lookup(m)
			if err != nil || info.Mutant == "" {
				t.Errorf("%s catches %s, which is not a registered mutant (%v)", s.Name, m, err)
				continue
			}
			c, err := s.Cell(m)
			if err != nil {
				t.Errorf("%s/%s: %v", s.Name, m, err)
				continue
			}
			if !slices.Contains([]string{"unsafe-service", "unsafe-client", "unsafe-lost", "stuck"}, c.Expected) {
				t.Errorf("%s/%s: expected %q, want unsafe or stuck", s.Name, m, c.Expected)
			}
			real, _ := s.Cell(info.Mutant)
			if c.Topology != real.Topology || c.Nodes != real.Nodes {
				t.Errorf("%s/%s runs on %s/%d, its algorithm %s on %s/%d", s.Name, m, c.Topology, c.Nodes,
					info.Mutant, real.Topology, real.Nodes)
			}
			caught[m] = true
		}
	}
	for _, m := range algorithms.MutantNames() {
		if !caught[m] {
			t.Errorf("mutant %s is caught by no scenario", m)
		}
	}
	for _, want := range []string{"token-plain-del", "token-no-validity", "token-watchdog-blind", "redlock-no-validity",
		"redlock-no-quorum", "zookeeper-watch-lowest", "zookeeper-ignore-session", "getset-no-compare", "fence-unchecked"} {
		if !slices.Contains(algorithms.MutantNames(), want) {
			t.Errorf("mutant %s is not registered (docs/design.md#mutants)", want)
		}
	}
}

// TestMutantCells: a mutant runs its real algorithm's variants, its own where it has one, and
// the scenario's Catches code as its expectation; mutants stay out of Names and All.
func TestMutantCells(t *testing.T) {
	lat, _ := scenarios.Lookup("latency")
	real, _ := lat.Cell("token")
	mut, _ := lat.Cell("token-no-validity")
	if !slices.Equal(real.Faults, mut.Faults) || len(mut.Faults) == 0 || mut.Faults[0].Wire == nil {
		t.Errorf("latency: token-no-validity faults %+v, token's %+v: want the same winning reply held on the wire", mut.Faults, real.Faults)
	}
	if real.Expected != "safe" || mut.Expected != "unsafe-client" {
		t.Errorf("latency: token expects %q, token-no-validity %q; want safe and unsafe-client", real.Expected, mut.Expected)
	}
	// A fault at a point a lock does not mark is left out of its cell: redsync and a point-free
	// Redlock get the slow majority on the wire only, the built-in also the stall at its point.
	rl, _ := lat.Cell("redlock")
	rs, _ := lat.Cell("redsync")
	if len(rl.Faults) != 2 || len(rs.Faults) != 1 || rs.Faults[0].Wire == nil || !rs.Faults[0].Wire.Each {
		t.Errorf("latency: redlock faults %+v, redsync's %+v: want the wire's slow majority for both and the point stall for redlock", rl.Faults, rs.Faults)
	}
	sr, _ := scenarios.Lookup("slow-release")
	g, _ := sr.Cell("getset")
	gm, _ := sr.Cell("getset-no-compare")
	if !slices.Equal(g.Faults, gm.Faults) || len(g.Faults) != 2 || g.Faults[0].Wire == nil || g.Faults[1].Wire == nil {
		t.Errorf("slow-release: getset %+v, getset-no-compare %+v; want the same two wire faults", g.Faults, gm.Faults)
	}
	if c, _ := sr.Cell("token-no-validity"); c.Expected != "" {
		t.Errorf("slow-release expects %q of token-no-validity, which it does not name", c.Expected)
	}
	for _, m := range algorithms.MutantNames() {
		if slices.Contains(algorithms.Names(), m) {
			t.Errorf("mutant %s is listed by Names", m)
		}
		if _, err := algorithms.Lookup(m); err != nil {
			t.Errorf("Lookup(%s): %v", m, err)
		}
	}
}

// TestCatchesValidated: a scenario file may name mutants to catch, but only registered mutants
// with an unsafe or stuck code.
func TestCatchesValidated(t *testing.T) {
	for _, tc := range []struct{ yaml, wantErr string }{
		{"catches: {token-plain-del: Us}", ""},
		{"catches: {token: Us}", "not a mutant"},
		{"catches: {token-plain-del: S}", "want Us, Uc, Ul or X"},
	} {
		_, err := scenarios.Parse([]byte("scenarios:\n  - name: mine\n    summary: s\n    " + tc.yaml + "\n"))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.yaml, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", tc.yaml, err, tc.wantErr)
		}
	}
}
