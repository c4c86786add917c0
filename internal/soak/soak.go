// Package soak runs locks for minutes or hours under a seeded random mix of faults (docs/design.md#soak):
// the schedule is drawn from the seed before any server starts and saved as a scenario file, the
// history is checked as it is written (checker.Watch) and whole at the end (the verdict), and the
// report sums the violations up by cause, with rates and availability. `lockchaos soak` calls
// Run.
package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/lcerr"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
	"gopkg.in/yaml.v3"
)

// ErrBadOptions is wrapped by every error about Options (the CLI exits 254 on it).
var ErrBadOptions = lcerr.New("bad soak options")

// Files a soak writes into its Out directory.
const (
	PlanFile = "plan.yaml" // the schedule, a scenario file: lockchaos run --scenario-file runs it
	PlanJSON = "plan.json" // the schedule with its seed, rate and kinds: what --replay reads
	JSONFile = "soak.json"
	HTMLFile = "soak.html"
)

// Options configure a soak. Zero fields take the defaults in brackets.
type Options struct {
	// Algorithms run one after the other on the same plan; with more than one the page compares
	// them.
	Algorithms []string
	// Time is each algorithm's run [10m]; Rate the faults per minute [12]; Faults the kinds mixed
	// [every one that applies to every algorithm's topology, TemplateNames].
	Time   time.Duration
	Rate   float64
	Faults []string
	// Seed draws the plan and the run [1]; the CLI defaults it from the clock and prints it.
	Seed int64
	// Replay is the directory of an earlier soak: its plan and seed are run again (Time, Rate,
	// Faults and Seed must then be zero).
	Replay string
	// Emit writes the faults of each algorithm's first violation, shrunk, as a scenario file.
	Emit bool
	// Topology runs every algorithm on this one of its topologies [each its first].
	Topology string
	// Clients and TTL change the workload [5, 500ms].
	Clients int
	TTL     time.Duration
	// Out is where the soak is written [out/soak].
	Out string
	// Backend, Proxies, ClusterFile, CheckTimeout and Version pass to the runs.
	Backend, Proxies, ClusterFile, Version string
	CheckTimeout                           time.Duration
	// Log hears one line per phase; Progress the live check of the run under way (both may be nil).
	Log      io.Writer
	Progress func(algorithm string, p checker.Progress)
}

func (o Options) withDefaults() (Options, []algorithms.Info, error) {
	if o.Time == 0 && o.Replay == "" {
		o.Time = 10 * time.Minute
	}
	if o.Rate == 0 && o.Replay == "" {
		o.Rate = 12
	}
	if o.Seed == 0 && o.Replay == "" {
		o.Seed = 1
	}
	if o.Out == "" {
		o.Out = filepath.Join("out", "soak")
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	switch {
	case len(o.Algorithms) == 0:
		return o, nil, fmt.Errorf("%w: no algorithm (give --algorithm A or --algorithms a,b,c)", ErrBadOptions)
	case o.Replay != "" && (o.Time != 0 || o.Rate != 0 || o.Seed != 0 || len(o.Faults) > 0):
		return o, nil, fmt.Errorf("%w: --replay runs the saved plan: leave out --time, --rate, --faults and --seed", ErrBadOptions)
	case o.Time < 0 || (o.Replay == "" && o.Time < 5*time.Second):
		return o, nil, fmt.Errorf("%w: --time %s is too short for a soak (give at least 5s; 10m is the default)", ErrBadOptions, o.Time)
	case o.Rate < 0 || o.Rate > 600:
		return o, nil, fmt.Errorf("%w: --rate %g: give the faults per minute, between 0 and 600", ErrBadOptions, o.Rate)
	case o.Clients < 0 || o.Clients == 1:
		return o, nil, fmt.Errorf("%w: --clients %d: a lock needs at least 2 clients to be broken", ErrBadOptions, o.Clients)
	case o.TTL < 0 || (o.TTL > 0 && o.TTL < 10*time.Millisecond):
		return o, nil, fmt.Errorf("%w: --ttl %s is too short to aim faults at (give at least 10ms)", ErrBadOptions, o.TTL)
	}
	var infos []algorithms.Info
	for _, a := range o.Algorithms {
		info, err := algorithms.Lookup(a)
		if err != nil {
			return o, nil, fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
		if slices.ContainsFunc(infos, func(i algorithms.Info) bool { return i.Name == a }) {
			return o, nil, fmt.Errorf("%w: %s is named twice in --algorithms", ErrBadOptions, a)
		}
		if o.Topology != "" && !slices.Contains(info.Topologies, o.Topology) {
			return o, nil, fmt.Errorf("%w: %s does not run on topology %s (it runs on %s)", ErrBadOptions, a, o.Topology, strings.Join(info.Topologies, ", "))
		}
		infos = append(infos, info)
	}
	return o, infos, nil
}

// topologyOf is the topology info's soak runs on: Options.Topology, else its first.
func (o Options) topologyOf(info algorithms.Info) string {
	if o.Topology != "" {
		return o.Topology
	}
	return info.Topologies[0]
}

// Run soaks each algorithm in turn on one plan and writes Out/plan.yaml (first, before any
// server starts), Out/<algorithm>/ (the run: history, report), Out/soak.json and Out/soak.html.
// An error means bad options (wrapping ErrBadOptions), a harness that could not run, or
// unwritable output; what the locks did is in the report. A cancelled ctx (Ctrl-C) ends the run
// under way cleanly: what it recorded is checked and reported, and the algorithms after it are
// not run.
func Run(ctx context.Context, o Options) (*Report, error) {
	o, infos, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	topologies := make([]cluster.Topology, len(infos))
	for i, info := range infos {
		if topologies[i], err = cluster.LookupTopology(o.topologyOf(info)); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadOptions, info.Name, err)
		}
	}
	var plan Plan
	var before *Report // the replayed soak's report, when it wrote one
	if o.Replay != "" {
		if plan, err = loadPlan(o.Replay); err != nil {
			return nil, err
		}
		before = loadReport(o.Replay)
		if _, err := kindsFor(plan.Kinds, topologies); err != nil {
			return nil, err
		}
	} else {
		kinds, err := kindsFor(o.Faults, topologies)
		if err != nil {
			return nil, err
		}
		plan = NewPlan(o.Seed, o.Time, o.Rate, kinds, infos, o.Clients, o.TTL)
	}
	if len(plan.Faults) == 0 {
		return nil, fmt.Errorf("%w: %s at %.3g faults a minute drew no fault from seed %d: give a longer --time or a higher --rate", ErrBadOptions, plan.Time, plan.Rate, plan.Seed)
	}
	if err := plan.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("soak: make %s: %w", o.Out, err)
	}
	if err := writePlan(o.Out, plan); err != nil {
		return nil, err
	}
	began := time.Now()
	rep := &Report{Seed: plan.Seed, TimeMs: ms(plan.Time.D()), Rate: plan.Rate, Kinds: plan.Kinds,
		Faults: len(plan.Faults), Started: began.UTC().Format(time.RFC3339), Version: o.Version,
		Replay: o.Replay, Command: commandLine(o)}
	fmt.Fprintf(o.Log, "soak: %d faults of %s over %s (%.3g a minute), seed %d; plan %s\n",
		len(plan.Faults), strings.Join(plan.Kinds, ", "), plan.Time, plan.Rate, plan.Seed, filepath.Join(o.Out, PlanFile))
	var herr error
	for _, info := range infos {
		if ctx.Err() != nil {
			rep.Algorithms = append(rep.Algorithms, AlgorithmResult{Algorithm: info.Name, Topology: o.topologyOf(info),
				NotRun: "the soak was interrupted before it"})
			continue
		}
		ar, err := soakOne(ctx, o, plan, info)
		if b := before.algorithm(info.Name); b != nil && b.First != nil && b.FirstRules != nil && ar.NotRun == "" {
			again := ar.reproduces(b.FirstRules)
			ar.Reproduced = &again
		}
		rep.Algorithms = append(rep.Algorithms, ar)
		if err != nil {
			herr = err
			if runner.BadInput(err) {
				return nil, err
			}
		}
		if o.Emit && ar.First != nil && ctx.Err() == nil {
			if err := emit(ctx, o, plan, info, &rep.Algorithms[len(rep.Algorithms)-1]); err != nil {
				herr = errors.Join(herr, err)
			}
		}
	}
	rep.ElapsedMs = ms(time.Since(began))
	if err := rep.write(o.Out); err != nil {
		return rep, errors.Join(herr, err)
	}
	return rep, herr
}

// soakOne runs one algorithm on the plan, watching its history as it is written, and sums up its
// outcome.
func soakOne(ctx context.Context, o Options, plan Plan, info algorithms.Info) (AlgorithmResult, error) {
	ar := AlgorithmResult{Algorithm: info.Name, Topology: o.topologyOf(info)}
	cell, err := plan.CellFor(info, o.Topology)
	if err != nil {
		return ar, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	ro := runner.Options{Out: o.Out, Backend: o.Backend, Proxies: o.Proxies, Seed: plan.Seed, Version: o.Version,
		CheckTimeout: o.CheckTimeout, ClusterFile: o.ClusterFile, Full: true, ScenarioFile: filepath.Join(o.Out, PlanFile)}
	dir := runner.Dir(o.Out, cell, 0)
	// A soak's directory holds one soak: the live check must not read an earlier history there.
	if err := os.RemoveAll(dir); err != nil {
		return ar, fmt.Errorf("soak: clear %s: %w", dir, err)
	}
	fmt.Fprintf(o.Log, "soak %s on %s: %s, out %s\n", info.Name, ar.Topology, plan.Time, dir)
	live := startWatch(filepath.Join(dir, harness.HistoryFile), func(p checker.Progress) {
		if o.Progress != nil {
			o.Progress(info.Name, p)
		}
	})
	began := time.Now()
	rc, out, err := runner.RunCell(ctx, cell, ro, 0)
	ar.Live = live.stop()
	ar.ElapsedMs = ms(time.Since(began))
	ar.Dir = rc.Dir
	if out == nil {
		if err == nil {
			err = errors.New("soak: the run was not checked")
		}
		ar.NotRun = err.Error()
		return ar, err
	}
	switch {
	case rc.Err != "":
		ar.Error = rc.Err
	case ctx.Err() != nil:
		ar.Error = fmt.Sprintf("interrupted %s in: what it recorded is checked", history.FormatNs(int64(time.Since(began))))
	}
	ar.summarize(out, plan)
	return ar, nil
}

// commandLine is the command that replays the soak.
func commandLine(o Options) string {
	args := []string{"lockchaos", "soak", "--algorithms", strings.Join(o.Algorithms, ","), "--replay", o.Out}
	if o.Backend != "" && o.Backend != "local" {
		args = append(args, "--backend", o.Backend)
	}
	return strings.Join(args, " ")
}

// loadPlan reads the plan of an earlier soak from its directory.
func loadPlan(dir string) (Plan, error) {
	path := filepath.Join(dir, PlanJSON)
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Plan{}, fmt.Errorf("%w: --replay %s: no %s there (give the directory of an earlier soak)", ErrBadOptions, dir, PlanJSON)
		}
		return Plan{}, fmt.Errorf("%w: --replay %s: %w", ErrBadOptions, dir, err)
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil || p.Name != "soak" || len(p.Kinds) == 0 {
		return Plan{}, fmt.Errorf("%w: --replay %s: %s is not a soak's plan (%v)", ErrBadOptions, dir, path, err)
	}
	return p, nil
}

// loadReport reads an earlier soak's soak.json; nil when it has none (it died before the end).
func loadReport(dir string) *Report {
	b, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		return nil
	}
	var r Report
	if json.Unmarshal(b, &r) != nil {
		return nil
	}
	return &r
}

// algorithm is the result of the named algorithm in r (nil r or none: nil).
func (r *Report) algorithm(name string) *AlgorithmResult {
	if r == nil {
		return nil
	}
	for i := range r.Algorithms {
		if r.Algorithms[i].Algorithm == name {
			return &r.Algorithms[i]
		}
	}
	return nil
}

// writePlan writes the plan twice: as plan.json, which --replay reads, and as a scenario file
// that lockchaos run --scenario-file runs.
func writePlan(dir string, p Plan) error {
	js, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("soak: encode plan: %w", err)
	}
	ys, err := yaml.Marshal(scenarios.File{Scenarios: []scenarios.Scenario{p.Scenario}})
	if err != nil {
		return fmt.Errorf("soak: encode plan: %w", err)
	}
	head := fmt.Sprintf("# lockchaos soak plan, seed %d: %d faults of %s over %s.\n"+
		"# Replay the soak: lockchaos soak --algorithm A --replay %s\n"+
		"# Run it once: lockchaos run --algorithm A --scenario-file %s --scenario soak --seed %d --full\n",
		p.Seed, len(p.Faults), strings.Join(p.Kinds, ", "), p.Time, dir, filepath.Join(dir, PlanFile), p.Seed)
	if err := reports.WriteFile(filepath.Join(dir, PlanJSON), append(js, '\n')); err != nil {
		return err
	}
	return reports.WriteFile(filepath.Join(dir, PlanFile), append([]byte(head), ys...))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
