package scenarios_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/scenarios"
)

var seed = []string{"setnx", "setnx-expire", "setnx-px", "getset", "token", "redlock", "zookeeper"}

// TestCatalogueComplete: every scenario of docs/design.md#catalogue-and-expectations is there, says what it reproduces, and has
// an expectation (or an n/a reason) for every seed algorithm on a topology the algorithm runs on.
func TestCatalogueComplete(t *testing.T) {
	want := []string{"baseline", "client-crash", "client-pause", "clock-skew", "slow-release", "failover",
		"restart", "clock-jump", "partition", "latency", "getset-race", "node-kill", "zk-leader-kill"}
	if got := scenarios.Names(); !slices.Equal(got[:len(want)], want) {
		t.Errorf("catalogue %v, want %v first", got, want)
	}
	for _, s := range scenarios.All() {
		if s.Summary == "" {
			t.Errorf("%s: no summary", s.Name)
		}
		if s.Name != "baseline" && s.Reproduces == "" {
			t.Errorf("%s: does not say what it reproduces", s.Name)
		}
		for _, alg := range seed {
			c, err := s.Cell(alg)
			if err != nil {
				t.Errorf("%s/%s: %v", s.Name, alg, err)
				continue
			}
			if c.Expected == "" && c.NA == "" {
				t.Errorf("%s/%s: no expectation", s.Name, alg)
			}
			if c.NA != "" {
				continue
			}
			info, err := algorithms.Lookup(alg)
			if err != nil {
				t.Fatal(err)
			}
			if c.Topology != "" && !slices.Contains(info.Topologies, c.Topology) {
				t.Errorf("%s/%s: topology %s, but %s runs on %v", s.Name, alg, c.Topology, alg, info.Topologies)
			}
			for _, f := range c.Faults {
				if f.Point == "" || strings.HasPrefix(f.Point, "cs:") {
					continue
				}
				if !slices.Contains(info.Points, f.Point) {
					t.Errorf("%s/%s: fault at point %s, which %s never reaches (points %v)", s.Name, alg, f.Point, alg, info.Points)
				}
			}
		}
	}
}

func TestParseScenarioFile(t *testing.T) {
	good := `
scenarios:
  - name: my-pause
    summary: pause the holder for 2s
    workload: {clients: 3, ttl: 1s, duration: 3s}
    faults:
      - {kind: client-pause, point: cs:before-write, for: 2s}
    expect: {token: Uc, setnx: "S: others wait"}
`
	ss, err := scenarios.Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ss[0].Cell("token")
	if err != nil || c.Expected != "unsafe-client" || c.Workload.TTL.D().String() != "1s" || len(c.Faults) != 1 {
		t.Errorf("cell %+v, err %v", c, err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"unknown field", "scenarios:\n  - name: x\n    colour: red\n", "line 3: field colour not found"},
		{"wrong type", "scenarios:\n  - name: x\n    workload: {clients: many}\n", "line 3"},
		{"bad duration", "scenarios:\n  - name: x\n    workload: {ttl: soon}\n", "bad duration"},
		{"unknown fault", "scenarios:\n  - name: x\n    faults: [{kind: meteor}]\n", `fault kind "meteor" is unknown`},
		{"pause without point", "scenarios:\n  - name: x\n    faults: [{kind: client-pause, for: 1s}]\n", "needs a point"},
		{"bad expectation", "scenarios:\n  - name: x\n    expect: {token: fine}\n", "not one of S, Us"},
		{"n/a without reason", "scenarios:\n  - name: x\n    expect: {token: \"-\"}\n", "without a reason"},
		{"duplicate", "scenarios:\n  - name: x\n  - name: x\n", "used twice"},
		{"empty", "", "empty file"},
		{"no name", "scenarios:\n  - summary: s\n", "without a name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenarios.Parse([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// FuzzParse: the scenario file parser never panics, and what it accepts resolves for every seed
// algorithm.
func FuzzParse(f *testing.F) {
	f.Add([]byte("scenarios:\n  - name: x\n    faults: [{kind: client-pause, point: cs:before-write, for: 1s}]\n    expect: {token: Uc}\n"))
	f.Add([]byte("scenarios:\n  - name: y\n    workload: {clients: 3, ttl: 1s}\n    variants: {redlock: {nodes: 5}}\n"))
	f.Add([]byte("scenarios: [{name: z, expect: {setnx: \"-: no\"}}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ss, err := scenarios.Parse(data)
		if err != nil {
			return
		}
		for _, s := range ss {
			for _, alg := range seed {
				if _, err := s.Cell(alg); err != nil {
					t.Fatalf("accepted scenario %q does not resolve for %s: %v", s.Name, alg, err)
				}
			}
		}
	})
}

// "hold: 0s" and "think: 0s" mean zero (the throughput workload), where an absent field takes
// the harness's default; lock_per_client is a workload field.
func TestParseZeroHoldThink(t *testing.T) {
	ss, err := scenarios.Parse([]byte(`scenarios:
  - name: throughput
    summary: full speed
    workload: {hold: 0s, think: 0ms, lock_per_client: true}
    variants:
      zookeeper: {workload: {think: 0s}}
  - name: defaults
    summary: absent fields
    workload: {hold: 20ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	w := ss[0].Workload
	if !w.ZeroHold || !w.ZeroThink || !w.LockPerClient {
		t.Errorf("throughput: ZeroHold %v ZeroThink %v LockPerClient %v, want all true", w.ZeroHold, w.ZeroThink, w.LockPerClient)
	}
	if v := ss[0].Variants["zookeeper"].Workload; v.ZeroHold || !v.ZeroThink {
		t.Errorf("variant: ZeroHold %v ZeroThink %v, want false true", v.ZeroHold, v.ZeroThink)
	}
	if d := ss[1].Workload; d.ZeroHold || d.ZeroThink {
		t.Errorf("defaults: ZeroHold %v ZeroThink %v, want false", d.ZeroHold, d.ZeroThink)
	}
	c, err := ss[0].Cell("token")
	if err != nil || !c.Workload.ZeroHold || !c.Workload.ZeroThink {
		t.Errorf("cell: %+v %v: the zeros must reach the cell", c.Workload, err)
	}
	if _, err := scenarios.Parse([]byte("scenarios:\n  - name: x\n    summary: y\n    workload: {hold: 0s, colour: red}\n")); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("unknown workload field: %v, want an error naming it", err)
	}
}
