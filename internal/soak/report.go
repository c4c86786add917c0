package soak

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
)

// Report is soak.json: the plan, and each algorithm's outcome on it.
type Report struct {
	Seed       int64             `json:"seed"`
	TimeMs     float64           `json:"time_ms"`
	Rate       float64           `json:"rate_per_minute"`
	Kinds      []string          `json:"kinds"`
	Faults     int               `json:"faults_planned"`
	Started    string            `json:"started"`
	ElapsedMs  float64           `json:"elapsed_ms"`
	Version    string            `json:"version,omitempty"`
	Replay     string            `json:"replay_of,omitempty"`
	Command    string            `json:"command"`
	Algorithms []AlgorithmResult `json:"algorithms"`
}

// AlgorithmResult is one algorithm's soak, summed up from the checker's outcome of its whole
// history: nothing here is judged again.
type AlgorithmResult struct {
	Algorithm string `json:"algorithm"`
	Topology  string `json:"topology"`
	// Dir is the run's directory, relative to the soak's (its report.html draws the first
	// violation's timeline).
	Dir       string  `json:"dir,omitempty"`
	ElapsedMs float64 `json:"elapsed_ms"`
	// NotRun says why the algorithm was not soaked (or its run not checked); Error why its run
	// ended early (what it recorded is checked).
	NotRun string `json:"not_run,omitempty"`
	Error  string `json:"error,omitempty"`

	Verdict   checker.Verdict `json:"verdict,omitempty"`
	DecidedBy string          `json:"decided_by,omitempty"`
	Evidence  string          `json:"evidence,omitempty"`
	// DurationMs is the history's length; ChaosMs the soak's time, the exposure of the rates.
	DurationMs float64 `json:"duration_ms"`
	ChaosMs    float64 `json:"chaos_ms"`
	Operations int     `json:"operations"`
	WritesOk   int     `json:"writes_ok"`
	// FaultsFired counts the occurrences, ByKind by the plan's fault names.
	FaultsFired int            `json:"faults_fired"`
	ByKind      map[string]int `json:"faults_by_kind"`
	// Violations counts the violations the checker kept (all of them, unless Truncated: the
	// checker keeps the first 1000 of a long run), Overlaps, IllegalGrants and LostUpdates the
	// run's counts.
	Violations int  `json:"violations"`
	Truncated  bool `json:"violations_truncated,omitempty"`
	// Incidents counts the holders wronged: the violations grouped by the acquisition they
	// broke (one paused holder overlapped by ten later ones is one incident). The rates count
	// incidents.
	Incidents        int `json:"incidents"`
	Overlaps         int `json:"exclusion_violations"`
	IllegalGrants    int `json:"service_violations"`
	LostUpdates      int `json:"lost_updates"`
	FenceRegressions int `json:"fence_regressions"`
	// Unfired lists the plan's faults that never fired, with why: a run whose faults did not
	// fire proved nothing with them.
	Unfired []string `json:"unfired,omitempty"`
	// PerHour is incidents per hour of chaos, PerFault per fault fired: with 95% intervals.
	PerHour  Rate `json:"violations_per_hour"`
	PerFault Rate `json:"violations_per_fault"`
	// HeldShare is the share of the run some client held the lock; LongestStallMs the longest
	// time waiters went without a grant outside the faults (the checker's).
	HeldShare      float64 `json:"held_share"`
	LongestStallMs float64 `json:"longest_stall_ms"`
	// Groups are the violations by cause: the faults under which they happened and their class.
	Groups []Group `json:"groups"`
	// FirstRules are the plan's faults (1-based rules) open at the first violation, RuleSets
	// every distinct set of them open at a violation: what a replay compares against.
	FirstRules []int   `json:"first_rules"`
	RuleSets   [][]int `json:"rule_sets,omitempty"`
	// Reproduced, on a replay, says whether a violation happened again under (at least) the faults
	// of the replayed soak's first violation; nil when there is nothing to compare.
	Reproduced *bool                `json:"reproduced,omitempty"`
	First      *checker.Violation   `json:"first_violation,omitempty"`
	Live       Live                 `json:"live"`
	Fired      []checker.FiredFault `json:"-"`
	// Emitted is the scenario file of the first violation's faults (Options.Emit), EmitNote what
	// its shrinking found.
	Emitted  string `json:"emitted,omitempty"`
	EmitNote string `json:"emit_note,omitempty"`
}

// Rate is a count per unit of exposure with its exact (Garwood) 95% Poisson interval.
type Rate struct {
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

// Group is the violations of one cause.
type Group struct {
	// Cause names the plan's faults whose danger windows were open at the violations ("no
	// fault": none was), Kind and Class the violation's.
	Cause string        `json:"cause"`
	Kind  string        `json:"kind"`
	Class checker.Class `json:"class,omitempty"`
	Count int           `json:"count"`
	// Incidents counts the acquisitions its violations broke.
	Incidents int `json:"incidents"`
	// First is the group's first violation, Faults the fault occurrences open at it.
	First  checker.Violation    `json:"first"`
	Faults []checker.FiredFault `json:"faults"`
	// Names are the plan\'s names of Faults (late-release, slow-grant, ...), in order.
	Names []string `json:"fault_names"`
}

// summarize fills r from the checker's outcome of the whole run.
func (r *AlgorithmResult) summarize(out *checker.Outcome, plan Plan) {
	res := &out.Result
	r.Verdict, r.DecidedBy, r.Evidence = res.Verdict, res.DecidedBy, res.Evidence
	// An interrupted soak had chaos for as long as it ran.
	r.DurationMs, r.ChaosMs = res.DurationMs, min(ms(plan.Time.D()), res.DurationMs)
	r.Operations, r.WritesOk = res.Operations, res.WritesOk
	r.Overlaps, r.IllegalGrants, r.LostUpdates = res.ExclusionViolations, res.ServiceViolations, res.LostUpdates
	r.FenceRegressions = res.FenceRegressions
	r.LongestStallMs = res.LongestStallMs
	if res.DurationMs > 0 {
		r.HeldShare = res.HeldMs / res.DurationMs
	}
	r.First = res.FirstViolation
	r.Fired = res.FaultsFired
	r.ByKind = map[string]int{}
	byID := map[int64]checker.FiredFault{}
	for _, f := range res.FaultsFired {
		byID[f.Fault] = f
		if f.ActsOn == "harness" {
			continue
		}
		r.FaultsFired++
		r.ByKind[plan.name(f.Rule, f.Kind)]++
	}
	for _, p := range res.FaultsPlanned {
		if !p.Fired {
			r.Unfired = append(r.Unfired, fmt.Sprintf("#%d %s: %s", p.Rule, plan.name(p.Rule, p.Kind), p.Reason))
		}
	}
	if r.FaultsFired == 0 && r.Verdict == checker.Safe {
		// The checker judged a run without faults; a soak claims safety under chaos.
		r.Verdict = checker.Unknown
		r.DecidedBy = "no fault of the plan fired: the soak tested nothing (" + r.DecidedBy + ")"
	}
	vs := out.Analysis.Violations
	r.Violations = len(vs)
	r.Truncated = len(vs) >= 1000 && r.Overlaps+r.IllegalGrants > len(vs)
	broken := map[int64]bool{} // the acquisitions broken, by id
	incident := func(v checker.Violation, seen map[int64]bool) bool {
		if v.A.ID == 0 {
			return true // no holder named (an unlocated lost update): an incident of its own
		}
		if seen[v.A.ID] {
			return false
		}
		seen[v.A.ID] = true
		return true
	}
	groups := map[string]*Group{}
	groupSeen := map[string]map[int64]bool{}
	for _, v := range vs {
		if incident(v, broken) {
			r.Incidents++
		}
		var names []string
		var open []checker.FiredFault
		for _, id := range v.Faults {
			if f, ok := byID[id]; ok {
				open = append(open, f)
				if n := plan.name(f.Rule, f.Kind); !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		slices.Sort(names)
		rules := rulesOf(open)
		if !slices.ContainsFunc(r.RuleSets, func(rs []int) bool { return slices.Equal(rs, rules) }) {
			r.RuleSets = append(r.RuleSets, rules)
		}
		if r.FirstRules == nil && r.First != nil && v.AtMs == r.First.AtMs {
			r.FirstRules = rules
		}
		cause := strings.Join(names, " + ")
		if cause == "" {
			cause = "no fault"
		}
		key := cause + "|" + v.Kind + "|" + string(v.Class)
		g := groups[key]
		if g == nil {
			g = &Group{Cause: cause, Kind: v.Kind, Class: v.Class, First: v, Faults: open}
			for _, f := range open {
				g.Names = append(g.Names, plan.name(f.Rule, f.Kind))
			}
			groups[key], groupSeen[key] = g, map[int64]bool{}
		}
		g.Count++
		if incident(v, groupSeen[key]) {
			g.Incidents++
		}
	}
	r.PerHour = poissonRate(r.Incidents, r.ChaosMs/3.6e6)
	r.PerFault = poissonRate(r.Incidents, float64(r.FaultsFired))
	r.Groups = make([]Group, 0, len(groups))
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		r.Groups = append(r.Groups, *groups[k])
	}
	slices.SortStableFunc(r.Groups, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Incidents, a.Incidents), cmp.Compare(b.Count, a.Count), cmp.Compare(a.First.AtMs, b.First.AtMs))
	})
}

// rulesOf lists the rules of fault occurrences, sorted, without repeats.
func rulesOf(fs []checker.FiredFault) []int {
	out := []int{}
	for _, f := range fs {
		if f.Rule > 0 && !slices.Contains(out, f.Rule) {
			out = append(out, f.Rule)
		}
	}
	slices.Sort(out)
	return out
}

// reproduces reports whether r had a violation under at least the faults of want (an earlier
// soak's first violation, on the same plan).
func (r *AlgorithmResult) reproduces(want []int) bool {
	return slices.ContainsFunc(r.RuleSets, func(rs []int) bool {
		return !slices.ContainsFunc(want, func(x int) bool { return !slices.Contains(rs, x) })
	})
}

// name is the plan's name of its rule's fault (late-release, slow-grant, ...), or the kind.
func (p Plan) name(rule int, kind string) string {
	if rule >= 1 && rule <= len(p.Drawn) {
		return p.Drawn[rule-1]
	}
	return kind
}

// poissonRate is k events over exposure, with the exact 95% interval of a Poisson mean.
func poissonRate(k int, exposure float64) Rate {
	if exposure <= 0 {
		return Rate{}
	}
	lo, hi := poissonInterval(k)
	return Rate{Value: float64(k) / exposure, Lo: lo / exposure, Hi: hi / exposure}
}

// poissonInterval is Garwood's exact 95% interval for the mean of a Poisson count k: the means
// under which seeing k or more (lo), or k or fewer (hi), has probability 2.5%.
func poissonInterval(k int) (lo, hi float64) {
	const tail = 0.025
	hi = bisect(func(m float64) bool { return poissonCDF(k, m) > tail }, float64(k)+10*math.Sqrt(float64(k)+1)+10)
	if k > 0 {
		lo = bisect(func(m float64) bool { return 1-poissonCDF(k-1, m) < tail }, float64(k))
	}
	return lo, hi
}

// bisect finds the m in [0, top] where below(m) turns false (below is true up to it).
func bisect(below func(float64) bool, top float64) float64 {
	a, b := 0.0, top
	for range 100 {
		m := (a + b) / 2
		if below(m) {
			a = m
		} else {
			b = m
		}
	}
	return (a + b) / 2
}

// poissonCDF is P(X ≤ k) for X ~ Poisson(m), summed in log space.
func poissonCDF(k int, m float64) float64 {
	if m == 0 {
		return 1
	}
	sum := 0.0
	for i := 0; i <= k; i++ {
		lg, _ := math.Lgamma(float64(i) + 1)
		sum += math.Exp(float64(i)*math.Log(m) - m - lg)
	}
	return math.Min(sum, 1)
}

// format is "12 /h (8.1–17.2)".
func (r Rate) format(unit string) string {
	return fmt.Sprintf("%.3g%s (%.3g–%.3g)", r.Value, unit, r.Lo, r.Hi)
}
