package checker

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// The checker decides from what a fault line says the fault did (history.FaultMeaning), never
// from its name: a kind it has never heard of is judged by its fields, and a familiar name
// whose fields say otherwise is judged by the fields.
func TestFaultMeaningDecides(t *testing.T) {
	servers := history.FaultMeaning{ActsOn: history.ActsOnServers, TargetNodes: []string{"redis-1"}}
	network := history.FaultMeaning{ActsOn: history.ActsOnNetwork, TargetNodes: []string{"redis-1"}}
	// illegal: client 2 is granted at 100 ms while client 1's 500 ms lease runs; fault f starts
	// between the grants.
	illegal := func(name string, m history.FaultMeaning) Result {
		b := newHB("token", 500*time.Millisecond)
		a := b.acquireSent(1, 0, 0, 1, 500*time.Millisecond)
		b.read(1, a, 2, 3, 0)
		b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Name: name, Target: "redis-1",
			AtNs: at(50), FaultMeaning: m})
		b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1, AtNs: at(51)})
		a2 := b.acquireSent(2, 90, 90, 100, 500*time.Millisecond)
		b.read(2, a2, 101, 102, 0)
		b.write(2, a2, 103, 104, 1)
		b.write(1, a, 105, 106, 1)
		return CheckHistory(b.history(), Options{}).Result
	}
	for _, tc := range []struct {
		name  string
		m     history.FaultMeaning
		cause string
	}{
		{"gremlin", servers, "gremlin of redis-1 at 50 ms"},
		{"restart", network, "no fault or release in the history explains it"},
		{"restart", history.FaultMeaning{ActsOn: history.ActsOnServers, Arm: true}, "no fault or release in the history explains it"},
		{"restart", history.FaultMeaning{}, "restart of redis-1 at 50 ms"}, // an old line: its name says what it was
	} {
		r := illegal(tc.name, tc.m)
		if r.FirstViolation == nil || !strings.Contains(r.FirstViolation.Cause, tc.cause) {
			t.Errorf("%s %+v: first violation %+v, want the cause %q", tc.name, tc.m, r.FirstViolation, tc.cause)
		}
	}

	// A skewed clock is the cause when the line says a client's clock, and it is the grantee's.
	skew := func(m history.FaultMeaning) string {
		b := newHB("getset", 500*time.Millisecond)
		a := b.acquireSent(1, 0, 0, 1, 500*time.Millisecond)
		b.read(1, a, 2, 3, 0)
		b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Name: "time-warp", Target: "client-9",
			Detail: "clock offset 2s", AtNs: at(0), FaultMeaning: m})
		a2 := b.acquireSent(2, 90, 90, 100, 500*time.Millisecond)
		b.write(2, a2, 103, 104, 1)
		b.write(1, a, 105, 106, 1)
		return CheckHistory(b.history(), Options{}).Result.FirstViolation.Cause
	}
	if c := skew(history.FaultMeaning{ActsOn: history.ActsOnClock, TargetClients: []int{2}}); !strings.Contains(c, "client 2's clock was skewed (clock offset 2s)") {
		t.Errorf("clock fault on client 2: cause %q", c)
	}
	if c := skew(history.FaultMeaning{ActsOn: history.ActsOnClock, TargetClients: []int{3}}); strings.Contains(c, "skewed") {
		t.Errorf("clock fault on client 3 (its target text says client-9): cause %q blames it for client 2's grant", c)
	}

	// The danger window of a fault that lasts the run runs to the run's end, whatever its end
	// line; arming and the harness's stalls are no occurrences.
	window := func(name string, m history.FaultMeaning) Result {
		b := newHB("token", 500*time.Millisecond)
		b.cs(1, 0)
		b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Name: name, Target: "redis-1", AtNs: at(10), FaultMeaning: m})
		b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1, AtNs: at(11)})
		b.cs(2, 2000) // long after one lease past the end line
		return CheckHistory(b.history(), Options{}).Result
	}
	lasting := servers
	lasting.Lasting = true
	if r := window("node-gone", lasting); r.Evidence != EvidenceOK || r.WritesInWindow != 1 || len(r.FaultsFired) != 1 || !r.FaultsFired[0].Lasting {
		t.Errorf("lasting fault: evidence %q, %d writes in window, fired %+v; want ok, 1 (client 2's), lasting", r.Evidence, r.WritesInWindow, r.FaultsFired)
	}
	if r := window("kill", servers); r.WritesInWindow != 0 {
		t.Errorf("a fault named kill whose line does not say lasting: %d writes in its window, want 0", r.WritesInWindow)
	}
	for _, m := range []history.FaultMeaning{{ActsOn: history.ActsOnServers, Arm: true}, {ActsOn: history.ActsOnHarness}} {
		if r := window("failover", m); len(r.FaultsFired) != 0 || len(r.DangerWindows) != 0 {
			t.Errorf("%+v: fired %+v, danger %+v; want no occurrence", m, r.FaultsFired, r.DangerWindows)
		}
	}

	// The fault that held a late holder is found by its target clients, not its target's text.
	late := func(m history.FaultMeaning) string {
		b := newHB("token", 500*time.Millisecond)
		a := b.acquireSent(1, 0, 0, 1, 100*time.Millisecond)
		b.read(1, a, 2, 3, 0)
		b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Name: "nap", Target: "client-7", AtNs: at(4), FaultMeaning: m})
		b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1, AtNs: at(600)})
		a2 := b.acquireSent(2, 550, 550, 551, 500*time.Millisecond)
		b.read(2, a2, 552, 553, 0)
		b.write(1, a, 601, 602, 1)
		b.write(2, a2, 603, 604, 1)
		for _, v := range CheckHistory(b.history(), Options{}).Analysis.Violations {
			if v.Kind == "exclusion" {
				return v.Cause
			}
		}
		return ""
	}
	if c := late(history.FaultMeaning{ActsOn: history.ActsOnProcess, TargetClients: []int{1}}); !strings.Contains(c, "after a nap from 4 ms to 600 ms") {
		t.Errorf("a pause of client 1: cause %q", c)
	}
	if c := late(history.FaultMeaning{ActsOn: history.ActsOnProcess, TargetClients: []int{7}}); strings.Contains(c, "nap") {
		t.Errorf("a pause of client 7: cause %q blames it for client 1", c)
	}
}

// A result.json written before planned faults recorded what they do reads as its kinds meant.
func TestPlannedFaultOfOldResult(t *testing.T) {
	var r Result
	if err := json.Unmarshal([]byte(`{"verdict":"stuck","faults_planned":[{"rule":1,"kind":"client-crash","fired":true,"times":1},{"rule":2,"kind":"latency","fired":true,"times":1,"acts_on":"process"}]}`), &r); err != nil {
		t.Fatal(err)
	}
	want := []PlannedFault{{Rule: 1, Kind: "client-crash", Fired: true, Times: 1, ActsOn: history.ActsOnProcess, Lasting: true},
		{Rule: 2, Kind: "latency", Fired: true, Times: 1, ActsOn: history.ActsOnProcess}}
	if !reflect.DeepEqual(r.FaultsPlanned, want) {
		t.Errorf("faults planned %+v, want %+v", r.FaultsPlanned, want)
	}
}
