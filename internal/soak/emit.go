package soak

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
	"gopkg.in/yaml.v3"
)

// emitRuns is how many runs a shrink probe gets: a fault set breaks the lock if one of them does.
const emitRuns = 2

// emit turns the faults open at the algorithm's first violation into a scenario file of a few
// seconds, then shrinks it: the smallest subset of those faults (each alone first, then the
// whole set) that still breaks the lock in one of emitRuns runs, and a single fault's size as
// explore shrinks it (shrinkSize). It writes
// Out/emitted-<algorithm>.yaml and says in ar what the shrink found.
func emit(ctx context.Context, o Options, plan Plan, info algorithms.Info, ar *AlgorithmResult) error {
	var rules []int
	for _, id := range ar.First.Faults {
		for _, f := range ar.Fired {
			if f.Fault == id && f.Rule > 0 && !slices.Contains(rules, f.Rule) {
				rules = append(rules, f.Rule)
			}
		}
	}
	slices.Sort(rules)
	name := "soak-" + slug(info.Name)
	candidates := [][]int{rules}
	if len(rules) > 1 {
		candidates = nil
		for _, r := range rules {
			candidates = append(candidates, []int{r})
		}
		candidates = append(candidates, rules)
	}
	var found []int
	broke := false
	for i, c := range candidates {
		var err error
		if broke, err = probe(ctx, o, plan, info, plan.excerpt(name, c), i+1); err != nil {
			return err
		}
		if broke {
			found = c
			break
		}
	}
	sc := plan.excerpt(name, rules)
	switch {
	case broke && len(rules) == 0:
		ar.EmitNote = fmt.Sprintf("the first violation happened under no fault, and a run without faults broke the lock again (%d runs at most)", emitRuns)
	case broke:
		sc = plan.excerpt(name, found)
		ar.EmitNote = fmt.Sprintf("shrunk to %s, which broke the lock again (%d runs at most)", plan.names(found), emitRuns)
		if len(found) == 1 {
			smaller, note, err := shrinkSize(ctx, o, plan, info, sc, len(candidates)+1)
			if err != nil {
				return err
			}
			sc, ar.EmitNote = smaller, ar.EmitNote+"; "+note
		}
	default:
		ar.EmitNote = fmt.Sprintf("no subset of %s broke the lock again in %d runs each: the violation needed the soak's own timing or the state earlier faults left; the file holds them all", plan.names(rules), emitRuns)
	}
	b, err := yaml.Marshal(scenarios.File{Scenarios: []scenarios.Scenario{sc}})
	if err != nil {
		return fmt.Errorf("soak: encode emitted scenario: %w", err)
	}
	file := "emitted-" + slug(info.Name) + ".yaml"
	head := fmt.Sprintf("# lockchaos soak, seed %d: the faults open at %s's first violation (%s at %s).\n# %s\n# Run: lockchaos run --algorithm %s --scenario-file %s --scenario %s\n",
		plan.Seed, info.Name, ar.First.Kind, history.FormatMs(ar.First.AtMs), ar.EmitNote, info.Name, filepath.Join(o.Out, file), sc.Name)
	if err := reports.WriteFile(filepath.Join(o.Out, file), append([]byte(head), b...)); err != nil {
		return err
	}
	ar.Emitted = file
	return nil
}

// shrinkSteps bounds the binary search of a fault's size: 1/32 of its size at the most.
const shrinkSteps = 5

// size is the parameter of f a shrink varies (what explore's shrink varies: a pause's or a
// partition's length, a latency's or a clock's amount), nil for a fault without one.
func size(f *faults.Spec) *faults.Size {
	switch f.Kind {
	case "latency", "clock-skew", "clock-jump":
		return &f.Amount
	case "client-pause", "partition", "pause-server", "restart":
		return &f.For
	}
	return nil
}

// shrinkSize binary-searches the smallest size of sc's one fault that still breaks the lock, as
// explore's shrink does: the soak's size broke it, no fault is assumed not to; a size breaks if
// one of emitRuns runs is unsafe. It returns the scenario at the smallest breaking size found.
func shrinkSize(ctx context.Context, o Options, plan Plan, info algorithms.Info, sc scenarios.Scenario, n int) (scenarios.Scenario, string, error) {
	f := sc.Faults[0]
	p := size(&f)
	if p == nil || p.IsZero() {
		return sc, "its size is not shrunk (" + f.Kind + " has none)", nil
	}
	from := *p
	neg := from.D() < 0
	lo, hi := time.Duration(0), from.D()
	if neg {
		hi = -hi
	}
	at := func(v time.Duration) scenarios.Scenario {
		g := f
		if neg {
			v = -v
		}
		*size(&g) = faults.Fixed(v)
		c := sc
		c.Faults = []faults.Spec{g}
		return c
	}
	steps := 0
	for ; steps < shrinkSteps && ctx.Err() == nil; steps++ {
		mid := ((lo + hi) / 2).Round(time.Millisecond)
		broke, err := probe(ctx, o, plan, info, at(mid), n+steps)
		if err != nil {
			return sc, "", err
		}
		if broke {
			hi = mid
		} else {
			lo = mid
		}
	}
	return at(hi), fmt.Sprintf("its size shrunk from %s to %s, which broke it (%s did not; %d probes)", from.D(), hi, lo, steps), nil
}

// names lists rules as the plan names them: "#12 partition, #14 client-pause".
func (p Plan) names(rules []int) string {
	if len(rules) == 0 {
		return "no fault"
	}
	var s []string
	for _, r := range rules {
		s = append(s, fmt.Sprintf("#%d %s", r, p.name(r, p.Faults[r-1].Kind)))
	}
	return strings.Join(s, ", ")
}

// excerpt is the scenario of some of the plan's faults (rules, 1-based), moved so the first comes
// 1 s into the run, which lasts until 2 s after the last one healed.
func (p Plan) excerpt(name string, rules []int) scenarios.Scenario {
	sc := scenarios.Scenario{Name: name, Workload: p.Workload}
	var first time.Duration = -1
	for _, r := range rules {
		if at := p.Faults[r-1].At.D(); first < 0 || at < first {
			first = at
		}
	}
	end := time.Second
	for _, r := range rules {
		f := p.Faults[r-1]
		f.At = faults.Duration(f.At.D() - first + time.Second)
		sc.Faults = append(sc.Faults, f)
		end = max(end, f.At.D()+f.For.D())
	}
	sc.Workload.Duration = scenarios.Duration(end + 2*time.Second + max(p.Workload.TTL.D(), p.Workload.SessionTimeout.D()))
	sc.Summary = fmt.Sprintf("soak seed %d: %s, from the soak's plan", p.Seed, p.names(rules))
	return sc
}

// probe runs the scenario emitRuns times at most and reports whether the lock broke.
func probe(ctx context.Context, o Options, plan Plan, info algorithms.Info, sc scenarios.Scenario, n int) (bool, error) {
	for run := 1; run <= emitRuns; run++ {
		cell, err := sc.Cell(info.Name)
		if err != nil {
			return false, fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
		cell.Scenario = fmt.Sprintf("%s-probe-%d", sc.Name, n)
		ro := runner.Options{Out: filepath.Join(o.Out, "emit"), Backend: o.Backend, Proxies: o.Proxies,
			Seed: plan.Seed + int64(run) - 1, Version: o.Version, CheckTimeout: o.CheckTimeout, ClusterFile: o.ClusterFile}
		rc, _, err := runner.RunCell(ctx, cell, ro, run)
		if err != nil && rc.Result == nil {
			return false, err
		}
		fmt.Fprintf(o.Log, "soak %s: shrink probe %d (%s) run %d: %s\n", info.Name, n, label(sc.Faults), run, verdictOf(rc.Result))
		if rc.Result != nil && rc.Result.Verdict == checker.Unsafe {
			return true, nil
		}
	}
	return false, nil
}

// label lists faults with their sizes: "client-pause 644ms, partition 1.2s".
func label(fs []faults.Spec) string {
	if len(fs) == 0 {
		return "no fault"
	}
	var out []string
	for _, f := range fs {
		s := f.Kind
		if p := size(&f); p != nil {
			s += " " + p.D().String()
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

func verdictOf(r *checker.Result) string {
	if r == nil {
		return "not checked"
	}
	return string(r.Verdict)
}

// slug makes an algorithm's name a file name ("token+fence" → "token-fence").
func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}
