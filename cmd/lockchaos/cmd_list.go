package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/docker" // also registers the docker backend: doctor lists its requirements
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

type listing struct {
	Algorithms []listedAlgorithm    `json:"algorithms"`
	Scenarios  []scenarios.Scenario `json:"scenarios"`
	Topologies []string             `json:"topologies"`
	Faults     []string             `json:"faults"`
	Points     map[string][]string  `json:"harness_points"`
	// Wire says which servers' protocols wire points parse (docs/design.md#wire-points), by server kind.
	Wire map[string]string `json:"wire_points"`
	// Mutants are listed with --mutants only (docs/design.md#mutants: hidden from the default listing).
	Mutants []listedMutant `json:"mutants,omitempty"`
	// TopologyInfo is each topology as its descriptor says it, with its reference lock and the
	// fault kinds that cannot act there (and why).
	TopologyInfo []listedTopology `json:"topology_info"`
}

// listedTopology is a topology's descriptor as list shows it.
type listedTopology struct {
	cluster.Topology
	Reference string            `json:"reference"`
	NA        map[string]string `json:"faults_na"` // fault kind → why it cannot act there
}

// listedMutant is a mutant (algorithms.Mutants) and the scenarios that must catch it.
type listedMutant struct {
	Name       string   `json:"name"`
	Breaks     string   `json:"breaks"`
	Removed    string   `json:"removed"`
	Topologies []string `json:"topologies"`
	CaughtBy   []caught `json:"must_be_caught_by"`
}

type caught struct {
	Scenario string `json:"scenario"`
	Expect   string `json:"expect"`
}

// mutantListing lists the mutants with the scenarios whose Catches name them.
func mutantListing(scens []scenarios.Scenario) []listedMutant {
	var out []listedMutant
	for _, m := range algorithms.Mutants() {
		lm := listedMutant{Name: m.Name, Breaks: m.Mutant, Removed: m.Removed, Topologies: m.Topologies, CaughtBy: []caught{}}
		for _, s := range scens {
			if code, ok := s.Catches[m.Name]; ok {
				lm.CaughtBy = append(lm.CaughtBy, caught{s.Name, code})
			}
		}
		out = append(out, lm)
	}
	return out
}

type listedAlgorithm struct {
	Name       string   `json:"name"`
	Summary    string   `json:"summary"`
	Source     string   `json:"source"`
	Topologies []string `json:"topologies"`
	Points     []string `json:"points"`
	Fenced     bool     `json:"fenced"`
	// Unreached are the fault kinds that cannot reach the lock, and why (algorithms.Info).
	Unreached map[string]string `json:"unreached,omitempty"`
}

func cmdList(args []string, stdout io.Writer) (int, error) {
	var asJSON, mutants bool
	fs := newCommand("list")
	fs.BoolVar(&asJSON, "json", false, "print the listing as JSON")
	fs.BoolVar(&mutants, "mutants", false, "also list the mutants (docs/design.md#mutants) and the scenarios that must catch them")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	l := listing{Scenarios: scenarios.All(), Topologies: cluster.Topologies, Faults: faults.KindNames(),
		Points: map[string][]string{"critical section": harness.Points}, Wire: cluster.WireSupport()}
	for _, a := range algorithms.All() {
		l.Algorithms = append(l.Algorithms, listedAlgorithm{a.Name, a.Summary, a.Source, a.Topologies, a.Points, a.Fenced, a.Unreached})
	}
	for _, t := range cluster.AllTopologies() {
		lt := listedTopology{Topology: t, NA: map[string]string{}}
		if ref, err := algorithms.Reference(t.Name); err == nil {
			lt.Reference = ref.Name
		}
		for _, k := range l.Faults {
			if why := faults.Unavailable(faults.Spec{Kind: k}, t); why != "" {
				lt.NA[k] = why
			}
		}
		l.TopologyInfo = append(l.TopologyInfo, lt)
	}
	if mutants {
		l.Mutants = mutantListing(l.Scenarios)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return exitValid, enc.Encode(l)
	}
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ALGORITHM\tTOPOLOGIES\tNAMED POINTS\tSUMMARY")
	for _, a := range l.Algorithms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, strings.Join(a.Topologies, ","), strings.Join(a.Points, ","), a.Summary)
	}
	fmt.Fprintf(tw, "(harness)\t\t%s\tthe critical section's points, for every algorithm\n", strings.Join(harness.Points, ","))
	tw.Flush()
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tREPRODUCES\tSUMMARY")
	for _, s := range l.Scenarios {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, orDash(s.Reproduces), s.Summary)
	}
	tw.Flush()
	if mutants {
		fmt.Fprintln(stdout)
		tw = tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "MUTANT\tBREAKS\tMUST BE CAUGHT BY\tREMOVED")
		for _, m := range l.Mutants {
			var by []string
			for _, c := range m.CaughtBy {
				code, _, _ := strings.Cut(c.Expect, ":")
				by = append(by, c.Scenario+" ("+strings.TrimSpace(code)+")")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, m.Breaks, orDash(strings.Join(by, ", ")), m.Removed)
		}
		tw.Flush()
	}
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPOLOGY\tFAMILY\tREFERENCE\tWIRE PARSED\tFAULT KINDS THAT CANNOT ACT THERE")
	for _, t := range l.TopologyInfo {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, t.Family, t.Reference, orDash(t.Wire), orDash(strings.Join(slices.Sorted(maps.Keys(t.NA)), ", ")))
	}
	tw.Flush()
	for _, a := range l.Algorithms {
		for _, k := range slices.Sorted(maps.Keys(a.Unreached)) {
			fmt.Fprintf(stdout, "%s: %s cannot reach it: %s\n", a.Name, k, a.Unreached[k])
		}
	}
	fmt.Fprintf(stdout, "\ntopologies: %s\nfaults: %s\nwire points (a fault at a command on the wire) parse:\n", strings.Join(l.Topologies, ", "), strings.Join(l.Faults, ", "))
	for _, k := range slices.Sorted(maps.Keys(l.Wire)) {
		fmt.Fprintf(stdout, "  %s: %s\n", k, l.Wire[k])
	}
	return exitValid, nil
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func joinNames() string { return strings.Join(algorithms.Names(), ", ") }

func lookupAlgorithm(name string) (algorithms.Info, error) {
	info, err := algorithms.Lookup(name)
	if err != nil {
		return info, usagef("%v", err)
	}
	return info, nil
}

func cmdDoctor(ctx context.Context, args []string, stdout io.Writer) (int, error) {
	var clean bool
	var clusterFile string
	fs := newCommand("doctor")
	fs.BoolVar(&clean, "clean", false, "remove containers and networks left by killed docker runs")
	fs.StringVar(&clusterFile, "cluster", "", "check that every node and toxiproxy API of this cluster file (--backend external) is reachable")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if clusterFile != "" {
		return doctorCluster(ctx, clusterFile, stdout)
	}
	if clean {
		n, err := docker.Clean(ctx)
		if err != nil {
			return 0, fmt.Errorf("doctor --clean: %w", err)
		}
		fmt.Fprintf(stdout, "removed %d docker objects left by killed runs\n", n)
	}
	code := exitValid
	for _, backend := range []string{cluster.Local, cluster.Docker} {
		fmt.Fprintf(stdout, "backend %s:\n", backend)
		for _, r := range cluster.Requirements(backend) {
			mark := "ok     "
			if !r.OK {
				mark = "MISSING"
				if backend == cluster.Local {
					code = exitInvalid
				}
			}
			fmt.Fprintf(stdout, "  %s %-22s %s\n", mark, r.Name, r.Detail)
			if !r.OK && r.Fix != "" {
				fmt.Fprintf(stdout, "          fix: %s\n", r.Fix)
			}
		}
	}
	fmt.Fprintln(stdout, "backend external: needs a cluster file of running servers (--cluster FILE; doctor --cluster FILE checks it)")
	return code, nil
}

func cmdServe(ctx context.Context, args []string, stdout io.Writer) (int, error) {
	var addr string
	fs := newCommand("serve")
	fs.StringVar(&addr, "addr", "127.0.0.1:8080", "loopback address to listen on")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	dir := defaultOut
	switch len(pos) {
	case 0:
	case 1:
		dir = pos[0]
	default:
		return 0, usagef("serve: one report directory, not %d (lockchaos serve [DIR])", len(pos))
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return 0, usagef("serve: %s is not a report directory (run lockchaos matrix first)", dir)
	}
	ln, err := reports.Listen(addr)
	if err != nil {
		return 0, usagef("serve: %v", err)
	}
	fmt.Fprintf(stdout, "serving %s on http://%s/ (Ctrl-C stops)\n", dir, ln.Addr().(*net.TCPAddr))
	return exitValid, reports.ServeListener(ctx, dir, ln)
}
