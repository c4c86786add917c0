package explore

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/scenarios"
)

// Files explore writes in Options.Out.
const (
	JSONFile     = "explore.json"
	HTMLFile     = "explore.html"
	ScenarioFile = "explore-scenarios.yaml"
)

// Status of an experiment.
const (
	StatusExplored    = "explored"
	StatusNotExplored = "not explored" // the budget was spent first
	StatusNA          = "n/a"          // the fault cannot hit this algorithm (Skipped says why)
)

// Report is explore.json: every (point, fault) pair of one algorithm and what became of it.
type Report struct {
	Algorithm string `json:"algorithm"`
	Topology  string `json:"topology"`
	TTL       Dur    `json:"ttl"`
	// SessionTimeout is set for ZooKeeper; Lease is what faults were sized from (TTL or session).
	SessionTimeout Dur     `json:"session_timeout,omitempty"`
	Lease          Dur     `json:"lease"`
	Budget         Dur     `json:"budget"`
	Seed           int64   `json:"seed"`
	Clients        int     `json:"clients"`
	Started        string  `json:"started"`
	ElapsedMs      float64 `json:"elapsed_ms"`
	Version        string  `json:"version,omitempty"`
	// Counts over Experiments.
	Explored    int `json:"explored"`
	Unsafe      int `json:"unsafe"`
	Stuck       int `json:"stuck"`
	NotExplored int `json:"not_explored"`
	NotShrunk   int `json:"not_shrunk"`
	// Runs is the number of runs made; AvgOverheadMs the mean time a run took beyond its planned
	// fault phase and tail (cluster start, check, report).
	Runs          int           `json:"runs"`
	AvgOverheadMs float64       `json:"avg_overhead_ms"`
	Experiments   []*Experiment `json:"experiments"`
}

// Dur is a duration that reads and writes as a Go duration string ("412ms").
type Dur = scenarios.Duration

// Experiment is one (point, fault) pair.
type Experiment struct {
	// ID names the experiment's scenario in explore-scenarios.yaml.
	ID string `json:"id"`
	// Point is "" for a fault not aimed at a point (clock-skew runs from the start).
	Point string `json:"point"`
	Fault string `json:"fault"`
	// Param names the fault's size that the shrink varies ("" = none: crash, restart, failover);
	// Tried is the size the survey ran.
	Param  string `json:"param,omitempty"`
	Tried  Dur    `json:"tried,omitempty"`
	Status string `json:"status"`
	// Skipped says why a fault does not apply (status n/a).
	Skipped string `json:"skipped,omitempty"`
	// Run is the survey's run that decides the pair: the one that broke the lock, if any did.
	// Survey lists every survey run (a second one, budget permitting, when the first was safe).
	Run    Attempt   `json:"run"`
	Survey []Attempt `json:"survey"`
	// Min is the smallest size seen to break the lock: the shrink's result, or the survey's size
	// when there was no shrink (nil when the pair did not break). MinOfTTL is Min/TTL.
	Min      *Dur    `json:"min,omitempty"`
	MinOfTTL float64 `json:"min_of_ttl,omitempty"`
	Shrink   *Shrink `json:"shrink,omitempty"`
	// AcquireToPointMs is, for a pause, the median over the pair's runs of how long after its
	// Acquire call the paused client reached the point: TTL minus this is the lease it had left
	// there, which the smallest breaking pause is to be compared with.
	AcquireToPointMs *float64 `json:"acquire_to_point_ms,omitempty"`
}

// Attempt is one run of an experiment.
type Attempt struct {
	Param    Dur             `json:"param,omitempty"`
	Scenario string          `json:"scenario,omitempty"`
	Seed     int64           `json:"seed,omitempty"`
	Verdict  checker.Verdict `json:"verdict,omitempty"`
	Class    string          `json:"class,omitempty"`
	TTDMs    *float64        `json:"ttd_ms"`
	// Report is the run's report.html, relative to Out; Command re-runs the run.
	Report  string `json:"report,omitempty"`
	Command string `json:"command,omitempty"`
	// AcquireToPointMs is, for a pause, how long after its Acquire call the paused client reached
	// the point (the fault's start line: it includes the time to silence the client's links).
	AcquireToPointMs *float64 `json:"acquire_to_point_ms,omitempty"`
	WallMs           float64  `json:"wall_ms,omitempty"`
	Planned          float64  `json:"planned_ms,omitempty"`
	Error            string   `json:"error,omitempty"`
}

// Shrink is the binary search for the smallest breaking size.
type Shrink struct {
	// Lo did not break in any of its runs (0 is assumed not to); Hi broke. Converged: Hi−Lo is
	// within Resolution; else Stopped says why the search ended early, and Hi is an upper bound.
	Lo         Dur     `json:"lo"`
	Hi         Dur     `json:"hi"`
	Resolution Dur     `json:"resolution"`
	Converged  bool    `json:"converged"`
	Stopped    string  `json:"stopped,omitempty"`
	Probes     []Probe `json:"probes"`
	// MinRun is the breaking run at Hi.
	MinRun Attempt `json:"min_run"`
}

// Probe is one size tried by the shrink.
type Probe struct {
	Param Dur       `json:"param"`
	Broke bool      `json:"broke"`
	Runs  []Attempt `json:"runs"`
}

// Broken returns the experiments that found the lock unsafe or stuck.
func (r *Report) Broken() []*Experiment {
	var out []*Experiment
	for _, e := range r.Experiments {
		if e.Status == StatusExplored && e.Run.broke() {
			out = append(out, e)
		}
	}
	return out
}

// Find returns the experiment of a pair, or nil.
func (r *Report) Find(point, fault string) *Experiment {
	for _, e := range r.Experiments {
		if e.Point == point && e.Fault == fault {
			return e
		}
	}
	return nil
}

// Best is the run that shows the pair's failure at its smallest size (the survey's run when
// nothing was shrunk).
func (e *Experiment) Best() Attempt {
	if e.Shrink != nil && e.Shrink.MinRun.Verdict != "" {
		return e.Shrink.MinRun
	}
	return e.Run
}

// MinText says an experiment's minimum beside the lease its faults were sized from, e.g.
// "min pause 412ms = 0.82×TTL" (ZooKeeper: "= 1.10×session timeout"); "≤" marks a bound.
func (r *Report) MinText(e *Experiment) string {
	if e.Min == nil || e.Param == "" {
		return ""
	}
	bound := ""
	if e.Shrink == nil || !e.Shrink.Converged {
		bound = "≤ " // only a size known to break, not the smallest
	}
	lease, label := r.TTL, "TTL"
	if r.SessionTimeout != 0 && e.Fault != KindSlow && e.Fault != KindClockSkew {
		lease, label = r.SessionTimeout, "session timeout"
	}
	return fmt.Sprintf("min %s %s%s = %.2f×%s", e.Param, bound, e.Min.D(), float64(*e.Min)/float64(lease), label)
}

func (e *Experiment) describe(v time.Duration) string {
	at := " at " + e.Point
	if e.Point == "" {
		at = " from the start"
	}
	if e.Param == "" {
		return e.Fault + at
	}
	return fmt.Sprintf("%s (%s %s)%s", e.Fault, e.Param, v, at)
}

// finish fills the counts.
func (r *Report) finish() {
	var over float64
	for _, e := range r.Experiments {
		runs := []Attempt{}
		switch e.Status {
		case StatusExplored:
			r.Explored++
			runs = append(runs, e.Survey...)
			switch e.Run.Verdict {
			case checker.Unsafe:
				r.Unsafe++
			case checker.Stuck:
				r.Stuck++
			}
		case StatusNotExplored:
			r.NotExplored++
		}
		if e.Min != nil {
			e.MinOfTTL = float64(*e.Min) / float64(r.TTL)
		}
		if e.Status == StatusExplored && e.Run.broke() && e.Param != "" && (e.Shrink == nil || !e.Shrink.Converged) {
			r.NotShrunk++
		}
		if e.Shrink != nil {
			for _, p := range e.Shrink.Probes {
				runs = append(runs, p.Runs...)
			}
		}
		var atp []float64
		for _, run := range runs {
			r.Runs++
			over += run.WallMs - run.Planned
			if run.AcquireToPointMs != nil {
				atp = append(atp, *run.AcquireToPointMs)
			}
		}
		if len(atp) > 0 {
			slices.Sort(atp)
			m := atp[len(atp)/2]
			e.AcquireToPointMs = &m
		}
	}
	if r.Runs > 0 {
		r.AvgOverheadMs = over / float64(r.Runs)
	}
}
