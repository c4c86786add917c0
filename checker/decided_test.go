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

// crashedRun is a contended run of clients 2 and 3 every 10 ms from 150 ms until end (ms), after
// client 1 was granted the lock at 40 ms and crashed holding it at 45 (a lasting fault that never
// ends, rule 1); TTL 100 ms, stuck limit 200 ms.
func crashedRun(end float64) *hb {
	b := newHB("token", 100*time.Millisecond)
	b.h.Meta.StuckAfterNs = at(200)
	b.h.Meta.Faults = []history.PlannedFault{{Kind: "client-crash", Point: "cs:acquired", ActsOn: history.ActsOnProcess, Lasting: true}}
	b.cs(2, 0)
	b.cs(3, 20)
	b.acquire(1, 39, 40)
	b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Rule: 1, Name: "client-crash",
		Target: "client-1", AtNs: at(45), FaultMeaning: history.FaultMeaning{ActsOn: history.ActsOnProcess, Lasting: true, TargetClients: []int{1}}})
	b.op(history.OpAcquire, 3, 0, 51, history.TypeFail, 140, nil, "timeout")
	a := b.op(history.OpAcquire, 2, 0, 50, history.TypeOk, 150, nil, "") // once client 1's lease ran out
	b.read(2, a, 151, 152, b.value)
	b.write(2, a, 153, 154, b.value+1)
	b.value++
	b.release(2, a, 155, 156)
	for t, c := 160.0, 3; t < end; t, c = t+10, 5-c {
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
		{"a stall between attempts", func() *hb {
			b := decidedRun(600, 1)
			for t := 600.0; t < 750; t += 10 { // every attempt refused at once, none in flight at 750
				b.op(history.OpAcquire, 1+int(t)/10%3, 0, t, history.TypeFail, t+1, nil, "connection refused")
			}
			return b
		}(), "", ""},
		// A crash is over at its instant (45 ms), as the liveness check takes it: settled a
		// whole run's tail (300 ms) later.
		{"a crash, too soon", crashedRun(330), "", ""},
		{"a crash, settled", crashedRun(500), Safe, "the last at 45 ms"},
		{"stuck", func() *hb {
			b := decidedRun(600, 1)
			b.op(history.OpAcquire, 1, 0, 600, "", 0, nil, "") // waits from 600 ms...
			b.op(history.OpAcquire, 2, 0, 601, "", 0, nil, "")
			b.add(history.Event{Type: history.TypeWire, AtNs: at(820), Dir: history.WireRequest}) // ...past the limit at 820
			return b
		}(), Stuck, "stuck at 800 ms"},
		{"stuck with a fault yet to fire", func() *hb {
			b := decidedRun(600, 2)
			b.op(history.OpAcquire, 1, 0, 600, "", 0, nil, "")
			b.add(history.Event{Type: history.TypeWire, AtNs: at(820), Dir: history.WireRequest})
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

// A run stopped unsafe or stuck whose whole history is not is unknown, not safe: the stop was
// wrong, and it cut the run short. A run stopped safe is judged whole like any run, and one
// stopped stuck whose whole history is stuck stays stuck.
func TestStopLineVerdicts(t *testing.T) {
	stalled := func() *hb {
		b := decidedRun(600, 1)
		b.op(history.OpAcquire, 1, 0, 600, "", 0, nil, "")
		b.add(history.Event{Type: history.TypeWire, AtNs: at(820), Dir: history.WireRequest})
		return b
	}
	for _, c := range []struct {
		name, verdict string
		b             *hb
		want          Verdict
	}{
		{"unsafe", "unsafe", decidedRun(600, 1), Unknown},
		{"safe", "safe", decidedRun(600, 1), Safe},
		{"stuck, not", "stuck", decidedRun(600, 1), Unknown},
		{"stuck", "stuck", stalled(), Stuck},
	} {
		b := c.b
		b.add(history.Event{Type: history.TypeStop, Name: c.verdict, Detail: "test", AtNs: at(820)})
		r := CheckHistory(&b.h, Options{}).Result
		if r.Verdict != c.want {
			t.Errorf("%s: verdict %s (%s), want %s", c.name, r.Verdict, r.DecidedBy, c.want)
		}
		if c.want != Unknown && r.Stopped != "test" {
			t.Errorf("%s: result.stopped = %q, want the stop line's reason", c.name, r.Stopped)
		}
	}
}
