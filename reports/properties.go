package reports

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// propRow is one algorithm's line in the property table: what its measured runs show, or
// "not measured" where no run says.
type propRow struct {
	Algorithm string
	Cells     []propCell
}

type propCell struct {
	Text  string
	Class string // yes, no, nm (not measured), or ""
}

const notMeasured = "not measured"

// properties derives each algorithm's properties from the results present. It reads results only
// (never expectations), so the table says what was measured.
func properties(algos []string, cells []Cell) ([]string, []propRow) {
	names := []string{"mutual exclusion", "deadlock-free after a holder crash", "survives a node loss",
		"fencing token", "acquire latency p50 / p99", "throughput"}
	var rows []propRow
	for _, a := range algos {
		var rs []*Cell
		for i := range cells {
			if cells[i].Algorithm == a && cells[i].Result != nil && cells[i].NA == "" && cells[i].Err == "" {
				rs = append(rs, &cells[i])
			}
		}
		rows = append(rows, propRow{Algorithm: a, Cells: []propCell{
			exclusionProp(rs),
			livenessProp(rs, lasting(history.ActsOnProcess), "no — stuck after the holder crashed", "crashed a client"),
			livenessProp(rs, lasting(history.ActsOnServers), "no — stuck after a node was killed", "killed a node for good"),
			fencingProp(rs),
			latencyProp(rs),
			throughputProp(rs),
		}})
	}
	return names, rows
}

func exclusionProp(rs []*Cell) propCell {
	if len(rs) == 0 {
		return propCell{notMeasured, "nm"}
	}
	var bad []string
	scen := map[string]bool{}
	for _, c := range rs {
		scen[c.Scenario] = true
		if c.Result.Verdict != checker.Unsafe {
			continue
		}
		s := c.Scenario
		if cat := category(c.Result); cat != catUnsafe {
			s += " (" + strings.TrimPrefix(cat, "unsafe-") + ")"
		}
		bad = append(bad, s)
	}
	if len(bad) == 0 {
		return propCell{fmt.Sprintf("holds under all %d measured scenarios", len(scen)), "yes"}
	}
	return propCell{"violated under " + strings.Join(dedupe(bad), ", "), "no"}
}

// lasting selects the runs that planned a fault acting on what whose effect lasts the run (a
// client crashed, a node killed for good), by what their result says the faults do.
func lasting(what string) func(*checker.Result) bool {
	return func(r *checker.Result) bool {
		return slices.ContainsFunc(r.FaultsPlanned, func(p checker.PlannedFault) bool {
			return p.ActsOn == what && p.Lasting && !p.Setup
		})
	}
}

// livenessProp judges the runs that measure a property (measures): stuck in any run is a no;
// otherwise the lock kept being granted (even if unsafely — that is the exclusion column's
// business). none says what no measured run did.
func livenessProp(rs []*Cell, measures func(*checker.Result) bool, no, none string) propCell {
	var scen []string
	for _, c := range rs {
		if !measures(c.Result) {
			continue
		}
		scen = append(scen, c.Scenario)
		if c.Result.Verdict == checker.Stuck {
			return propCell{no, "no"}
		}
		if c.Result.Verdict == checker.Unknown {
			return propCell{"unknown (" + c.Scenario + " was inconclusive)", "nm"}
		}
	}
	if len(scen) == 0 {
		return propCell{notMeasured + " (no run " + none + ")", "nm"}
	}
	return propCell{"yes (" + strings.Join(dedupe(scen), ", ") + ")", "yes"}
}

// fencingProp: a resource that rejected stale writes proves fencing; exclusion violations that
// lost updates prove its absence; with no violation there is nothing to tell.
func fencingProp(rs []*Cell) propCell {
	rejected, lost, violatedSafe := 0, 0, false
	for _, c := range rs {
		r := c.Result
		rejected += r.StaleWritesRejected
		lost += r.LostUpdates
		if r.ExclusionViolations > 0 && r.LostUpdates == 0 {
			violatedSafe = true
		}
	}
	switch {
	case rejected > 0 && lost == 0:
		return propCell{fmt.Sprintf("yes — %d stale writes rejected, no lost updates", rejected), "yes"}
	case lost > 0:
		return propCell{fmt.Sprintf("no — %d lost updates", lost), "no"}
	case violatedSafe:
		return propCell{"no lost updates despite exclusion violations", ""}
	}
	return propCell{notMeasured + " (no violation to fence)", "nm"}
}

// latencyProp prefers the baseline run: faults make latency measure the fault, not the lock.
func latencyProp(rs []*Cell) propCell {
	c, note := pick(rs)
	if c == nil {
		return propCell{notMeasured, "nm"}
	}
	l := c.Result.AcquireLatencyMs
	return propCell{fmt.Sprintf("%s / %s%s", history.FormatMs(l.P50), history.FormatMs(l.P99), note), ""}
}

func throughputProp(rs []*Cell) propCell {
	c, note := pick(rs)
	if c == nil {
		return propCell{notMeasured, "nm"}
	}
	return propCell{fmt.Sprintf("%.1f critical sections/s%s", c.Result.ThroughputCSPerS, note), ""}
}

// pick returns a run that planned no fault (the baseline), else the run with the median
// throughput, saying which.
func pick(rs []*Cell) (*Cell, string) {
	for _, c := range rs {
		if len(c.Result.FaultsPlanned) == 0 {
			return c, " (" + c.Scenario + ")"
		}
	}
	if len(rs) == 0 {
		return nil, ""
	}
	s := append([]*Cell(nil), rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].Result.ThroughputCSPerS < s[j].Result.ThroughputCSPerS })
	c := s[len(s)/2]
	return c, " (" + c.Scenario + ", no run without faults)"
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
