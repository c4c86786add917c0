// Package explore finds a lock's failure modes without a catalogue: it aims every fault that can hit
// a client or a node at every named point, one short experiment each, then shrinks each failure to
// the smallest fault that still causes it. `lockchaos explore` and locktest call Run.
package explore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/internal/lcerr"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// ErrBadOptions is wrapped by every error about Options (the CLI exits 254 on it).
var ErrBadOptions = lcerr.New("bad explore options")

// Options configure one exploration. Zero fields take the defaults in brackets.
type Options struct {
	// Algorithm is a registered algorithm's name; Lock, when its New is set, is the lock itself
	// as a value (a user's, registered nowhere), and Algorithm defaults to its name.
	Algorithm string
	Lock      algorithms.Info
	// Budget bounds the whole exploration [5m]: no experiment starts after it is spent.
	Budget time.Duration
	// Out is the directory of explore.json, explore.html, explore-scenarios.yaml and the runs
	// [out/explore/<algorithm>].
	Out string
	// TTL is the lock's lease [500ms, the catalogue's]; faults are sized from it.
	TTL time.Duration
	// SessionTimeout is ZooKeeper's [max(TTL, 1s)]; faults on ZooKeeper are sized from it.
	SessionTimeout time.Duration
	// Clients per experiment [3].
	Clients int
	// Seed of every run [1]; a shrink probe's second run uses Seed+1.
	Seed int64
	// Points and Faults restrict the pairs explored [all]; Kinds lists the fault names.
	Points []string
	Faults []string
	// Runs per shrink probe [2]: a parameter breaks the lock if any of its runs does.
	Runs int
	// NoShrink skips the shrinking phase.
	NoShrink bool
	// Backend, Proxies, ClusterFile, CheckTimeout and Version pass to every run.
	Backend      string
	Proxies      string
	ClusterFile  string
	CheckTimeout time.Duration
	Version      string
	// Log receives one progress line per run (may be nil).
	Log io.Writer
	// Now is the clock the budget is measured by [time.Now]; tests replace it.
	Now func() time.Time
}

func (o Options) withDefaults() (Options, algorithms.Info, error) {
	info := o.Lock
	if info.New == nil {
		var err error
		if info, err = algorithms.Lookup(o.Algorithm); err != nil {
			return o, info, fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
	}
	o.Algorithm = info.Name
	if o.Budget == 0 {
		o.Budget = 5 * time.Minute
	}
	if o.Out == "" {
		o.Out = filepath.Join("reports", "explore", o.Algorithm)
	}
	if o.TTL == 0 {
		o.TTL = 500 * time.Millisecond
	}
	if o.Clients == 0 {
		o.Clients = 3
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Runs == 0 {
		o.Runs = 2
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.Budget < 0:
		return o, info, fmt.Errorf("%w: budget %s is negative (give a duration like 5m)", ErrBadOptions, o.Budget)
	case o.TTL < 10*time.Millisecond:
		return o, info, fmt.Errorf("%w: ttl %s is too short to aim faults at (give at least 10ms, e.g. 300ms)", ErrBadOptions, o.TTL)
	case o.SessionTimeout < 0:
		return o, info, fmt.Errorf("%w: session timeout %s is negative", ErrBadOptions, o.SessionTimeout)
	case o.Clients < 2:
		return o, info, fmt.Errorf("%w: clients %d: a lock needs at least 2 clients to be broken", ErrBadOptions, o.Clients)
	case o.Runs < 1:
		return o, info, fmt.Errorf("%w: runs %d: give at least 1", ErrBadOptions, o.Runs)
	}
	if len(info.Topologies) == 0 {
		return o, info, fmt.Errorf("%w: algorithm %s names no topology", ErrBadOptions, o.Algorithm)
	}
	known := map[string]bool{}
	for _, k := range Kinds {
		known[k] = true
	}
	for _, f := range o.Faults {
		if !known[f] {
			return o, info, fmt.Errorf("%w: fault %q is not one explore aims (known: %v)", ErrBadOptions, f, Kinds)
		}
	}
	pts := map[string]bool{}
	for _, p := range newSetup(info, o).points() {
		pts[p] = true
	}
	for _, p := range o.Points {
		if !pts[p] {
			return o, info, fmt.Errorf("%w: %s has no point %q (its points: %v)", ErrBadOptions, o.Algorithm, p, newSetup(info, o).points())
		}
	}
	return o, info, nil
}

// explorer is one exploration in progress.
type explorer struct {
	o        Options
	s        setup
	rep      *Report
	deadline time.Time
	yaml     []scenarios.Scenario
}

// Run explores the algorithm: a survey of every (point, fault) pair, one run each, then a shrink of
// every pair that broke, until the budget is spent. It writes Out/explore.json, Out/explore.html
// and Out/explore-scenarios.yaml and returns the report. An error means bad options (wrapping
// ErrBadOptions), a harness that could not run at all, or unwritable output; what the lock did is
// in the report (see Report.Broken).
//
// Where it can miss a failure (false negatives): each experiment injects one fault, at the first
// time any client reaches the point (clock-skew: client 2's clock, from the start), sized past the
// lease; a failure that needs two faults, a later occurrence of the point, or a fault that breaks
// the lock only when it is smaller than the survey's size is not aimed at. A safe pair is run at most twice, so a rare race can pass. A
// shrink's minimum is the smallest size that broke the lock in one of Runs runs: scheduling delays
// only lengthen a pause, so it can read a little low, never high.
func Run(ctx context.Context, o Options) (*Report, error) {
	o, info, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	start := o.Now()
	x := &explorer{o: o, s: newSetup(info, o), deadline: start.Add(o.Budget)}
	x.rep = &Report{Algorithm: o.Algorithm, Topology: x.s.topology, TTL: d(o.TTL), Lease: d(x.s.lease),
		Budget: d(o.Budget), Seed: o.Seed, Clients: o.Clients, Started: start.UTC().Format(time.RFC3339),
		Version: o.Version, Experiments: x.s.plan(o)}
	if x.s.top.Has(cluster.TraitSessionLease) {
		x.rep.SessionTimeout = d(x.s.session)
	}
	na := 0
	for _, e := range x.rep.Experiments {
		if e.Status == StatusNA {
			na++
		}
	}
	fmt.Fprintf(o.Log, "explore %s: %d (point, fault) pairs (%d n/a) on %s, TTL %s, lease %s, budget %s, seed %d, out %s\n",
		o.Algorithm, len(x.rep.Experiments), na, x.s.topology, o.TTL, x.s.lease, o.Budget, o.Seed, o.Out)
	herr := x.survey(ctx)
	if herr == nil && !o.NoShrink {
		herr = x.shrinkAll(ctx)
	}
	x.rep.ElapsedMs = ms(o.Now().Sub(start))
	x.rep.finish()
	if err := x.write(); err != nil {
		return x.rep, err
	}
	return x.rep, herr
}

// spent reports whether no experiment may start any more.
func (x *explorer) spent(ctx context.Context) bool {
	return ctx.Err() != nil || !x.o.Now().Before(x.deadline)
}

// survey runs each pair once, with the fault sized past the lease; then, budget permitting, each
// pair that came out safe once more with the next seed: a failure depends on scheduling, and one
// run of a racy pair can miss it.
func (x *explorer) survey(ctx context.Context) error {
	for pass := 1; pass <= min(2, x.o.Runs); pass++ {
		for _, e := range x.rep.Experiments {
			switch {
			case e.Status == StatusNA:
				continue
			case pass == 2 && (e.Status != StatusExplored || e.Run.broke()):
				continue
			case x.spent(ctx):
				if pass == 1 {
					e.Status = StatusNotExplored
				}
				continue
			}
			r, err := x.run(ctx, e, e.Tried.D(), pass)
			if err != nil {
				return err
			}
			e.Status = StatusExplored
			e.Survey = append(e.Survey, *r)
			e.Run = *r
			if r.broke() {
				e.Min = &r.Param
			}
		}
	}
	return nil
}

// run carries out one experiment with the fault sized v; run > 0 numbers a shrink probe's repeats.
func (x *explorer) run(ctx context.Context, e *Experiment, v time.Duration, run int) (*Attempt, error) {
	sc := x.s.scenario(e, v)
	cell, err := sc.CellFor(x.s.alg, "")
	if err != nil {
		return nil, fmt.Errorf("explore: build %s: %w", sc.Name, err)
	}
	x.yaml = append(x.yaml, sc)
	ro := runner.Options{Out: x.o.Out, Backend: x.o.Backend, Proxies: x.o.Proxies, Seed: x.o.Seed,
		Version: x.o.Version, CheckTimeout: x.o.CheckTimeout, ClusterFile: x.o.ClusterFile,
		ScenarioFile: filepath.Join(x.o.Out, ScenarioFile)}
	t0 := time.Now()
	rc, out, err := runner.RunCell(ctx, cell, ro, run)
	wall := time.Since(t0)
	r := &Attempt{Param: d(v), Scenario: sc.Name, Seed: x.o.Seed + int64(max(run, 1)-1), WallMs: ms(wall),
		Planned: ms(cell.Workload.Duration.D() + cell.Workload.Tail.D())}
	r.Command = runner.Command(cell, ro, r.Seed)
	if rc.Dir != "" {
		r.Report = filepath.ToSlash(filepath.Join(rc.Dir, "report.html"))
	}
	if err != nil && out == nil {
		if errors.Is(err, harness.ErrBadConfig) {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadOptions, sc.Name, err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("explore %s: %w", sc.Name, err)
	}
	if err != nil {
		r.Error = err.Error()
	}
	res := &out.Result
	r.Verdict = res.Verdict
	if res.ViolationClass != nil {
		r.Class = string(*res.ViolationClass)
	}
	r.TTDMs = res.TTDMs
	if e.Fault == KindPause {
		r.AcquireToPointMs = acquireToPoint(filepath.Join(x.o.Out, rc.Dir))
	}
	fmt.Fprintf(x.o.Log, "explore %s: %-22s %-13s %-9s %-8s %-7s %5.1fs  %s\n", x.o.Algorithm, orDash(e.Point),
		e.Fault, fmtParam(e.Param, v), r.Verdict, orDash(r.Class), wall.Seconds(), r.Report)
	return r, nil
}

func ms(v time.Duration) float64 { return float64(v.Microseconds()) / 1000 }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtParam(name string, v time.Duration) string {
	if name == "" {
		return "-"
	}
	return v.String()
}
