package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// decidedRun is a contended run of three clients, one critical section every 10 ms until end
// (ms), with one latency fault (rule 1, planned times) from 50 to 150 ms; TTL 100 ms, stuck limit
// 200 ms.
func decidedRun(end float64, times int) *hb {
	b := newHB("token", 100*time.Millisecond)
	b.h.Meta.StuckAfterNs = at(200)
	b.h.Meta.Faults = []history.PlannedFault{{Kind: "latency", Point: "cs:acquired", Times: times, ActsOn: history.ActsOnNetwork}}
	for t, c := 0.0, 1; t < end; t, c = t+10, c%3+1 {
		if t == 50 {
			b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Rule: 1, Name: "latency",
				Target: "client-1", AtNs: at(50), FaultMeaning: history.FaultMeaning{ActsOn: history.ActsOnNetwork, TargetClients: []int{1}}})
		}
		if t == 150 {
			b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1, AtNs: at(150)})
		}
		b.cs(c, t)
	}
	return b
}

func TestDecided(t *testing.T) {
	for _, c := range []struct {
		name string
		b    *hb
		want Verdict
		why  string
	}{
		// The fault healed at 150 ms: a whole run's tail after it (stuck limit + TTL) ends at 450.
		{"too soon after the heal", decidedRun(400, 1), "", ""},
		{"settled", decidedRun(600, 1), Safe, "the last at 150 ms"},
		{"a fault that may fire again", decidedRun(600, -1), "", ""},
		{"a fault not yet fired as often as planned", decidedRun(600, 2), "", ""},
		{"a stall under way", func() *hb {
			b := decidedRun(600, 1)
			b.op(history.OpAcquire, 1, 0, 600, "", 0, nil, "") // waits from 600 ms...
			b.op(history.OpAcquire, 2, 0, 601, "", 0, nil, "")
			b.add(history.Event{Type: history.TypeWire, AtNs: at(720), Dir: history.WireRequest}) // ...still at 720
			return b
		}(), "", ""},
		{"a violation", func() *hb {
			b := decidedRun(300, 1)
			b.acquire(1, 300, 301)
			b.acquire(2, 302, 303) // while client 1 holds
			return b
		}(), Unsafe, "violation at 303 ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, why := Decided(&c.b.h, Options{})
			if v != c.want || !strings.Contains(why, c.why) {
				t.Errorf("Decided = %q, %q; want %q with %q", v, why, c.want, c.why)
			}
		})
	}
}

// A run stopped unsafe whose whole history shows no violation is unknown, not safe: the stop was
// wrong, and it cut the run short. A run stopped safe is judged whole like any run.
func TestStopLineVerdicts(t *testing.T) {
	for _, c := range []struct {
		verdict string
		want    Verdict
	}{{"unsafe", Unknown}, {"safe", Safe}} {
		b := decidedRun(600, 1)
		b.add(history.Event{Type: history.TypeStop, Name: c.verdict, Detail: "test", AtNs: at(600)})
		r := CheckHistory(&b.h, Options{}).Result
		if r.Verdict != c.want {
			t.Errorf("stopped %s: verdict %s (%s), want %s", c.verdict, r.Verdict, r.DecidedBy, c.want)
		}
		if c.want == Safe && r.Stopped != "test" {
			t.Errorf("stopped safe: result.stopped = %q, want the stop line's reason", r.Stopped)
		}
	}
}
