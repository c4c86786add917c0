package history

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A fault line with its meaning: the recorder writes what encoding/json writes, the fast path
// reads it back as encoding/json does, and the fields survive the round trip.
func TestFaultMeaningLine(t *testing.T) {
	for _, e := range []Event{
		{Type: TypeFault, Phase: PhaseStart, Fault: 2, Rule: 1, Name: "partition", Target: "client-3,client-4 → redis-1",
			Point: "cs:acquired", AtNs: 7, FaultMeaning: FaultMeaning{ActsOn: ActsOnNetwork, TargetClients: []int{3, 4}, TargetNodes: []string{"redis-1"}}},
		{Type: TypeFault, Phase: PhaseStart, Fault: 3, Name: "kill", Target: "<redis-1>", AtNs: 9,
			FaultMeaning: FaultMeaning{ActsOn: ActsOnServers, Lasting: true, TargetNodes: []string{"<redis-1>"}}},
		{Type: TypeFault, Phase: PhaseStart, Fault: 1, Name: "failover:arm", AtNs: 1, FaultMeaning: FaultMeaning{ActsOn: ActsOnServers, Arm: true}},
		{Type: TypeFault, Phase: PhaseStart, Fault: 1 << 40, Name: "harness-stall", Target: "harness", AtNs: 1, FaultMeaning: FaultMeaning{ActsOn: ActsOnHarness}},
	} {
		line := bytes.TrimSpace(AppendJSON(nil, e))
		want, _ := json.Marshal(e)
		if !bytes.Equal(line, want) {
			t.Errorf("AppendJSON wrote\n%s\nencoding/json writes\n%s", line, want)
		}
		var slow Event
		if err := json.Unmarshal(line, &slow); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(slow, e) {
			t.Errorf("encoding/json read back %+v, want %+v", slow, e)
		}
		var fast Event
		if decodeFast(line, &fast) && !reflect.DeepEqual(fast, e) {
			t.Errorf("fast path read back %+v, want %+v", fast, e)
		}
		if got := e.Meaning(); !reflect.DeepEqual(got, e.FaultMeaning) {
			t.Errorf("Meaning of a line that has it = %+v, want its own %+v", got, e.FaultMeaning)
		}
	}
	// Booleans take the fast path, as the recorder writes them.
	var e Event
	if !decodeFast([]byte(`{"type":"fault","at_ns":1,"phase":"start","fault":1,"name":"x","acts_on":"process","lasting":true,"arm":false}`), &e) ||
		e.ActsOn != ActsOnProcess || !e.Lasting || e.Arm {
		t.Errorf("fast path: %+v", e)
	}
	for _, bad := range []string{`{"type":"fault","lasting":tru}`, `{"type":"fault","arm":1}`} {
		if decodeFast([]byte(bad), &e) {
			t.Errorf("fast path accepted %s", bad)
		}
	}
}

// The lines of histories written before fault lines carried their meaning mean what their names
// and targets meant (lines taken from real runs).
func TestFaultMeaningOfOldLines(t *testing.T) {
	for _, tc := range []struct {
		line string
		want FaultMeaning
	}{
		{`{"type":"fault","at_ns":2493946,"phase":"start","fault":1,"rule":1,"name":"clock-jump","target":"redis-1","point":"cs:acquired","detail":"server clock jumps +500ms"}`,
			FaultMeaning{ActsOn: ActsOnServers, TargetNodes: []string{"redis-1"}}},
		{`{"type":"fault","at_ns":194332,"phase":"start","fault":1,"rule":1,"name":"failover:arm","target":"master","detail":"prepared before clients start"}`,
			FaultMeaning{ActsOn: ActsOnServers, Arm: true}},
		{`{"type":"fault","at_ns":7232726,"phase":"start","fault":2,"rule":1,"name":"failover","target":"redis-1","point":"cs:acquired"}`,
			FaultMeaning{ActsOn: ActsOnServers, TargetNodes: []string{"redis-1"}}},
		{`{"type":"fault","at_ns":1765712,"phase":"start","fault":1,"rule":1,"name":"client-crash","target":"client-4","point":"cs:acquired"}`,
			FaultMeaning{ActsOn: ActsOnProcess, Lasting: true, TargetClients: []int{4}}},
		{`{"type":"fault","at_ns":500452125,"phase":"start","fault":1,"rule":1,"name":"kill","target":"redis-1"}`,
			FaultMeaning{ActsOn: ActsOnServers, Lasting: true, TargetNodes: []string{"redis-1"}}},
		{`{"type":"fault","at_ns":1584971,"phase":"start","fault":1,"rule":1,"name":"partition","target":"client-3,client-12 → redis-1,redis-2","point":"cs:acquired"}`,
			FaultMeaning{ActsOn: ActsOnNetwork, TargetClients: []int{3, 12}, TargetNodes: []string{"redis-1", "redis-2"}}},
		{`{"type":"fault","at_ns":5,"phase":"start","fault":1,"name":"clock-skew","target":"client-2","detail":"clock offset 1.5s"}`,
			FaultMeaning{ActsOn: ActsOnClock, TargetClients: []int{2}}},
		{`{"type":"fault","at_ns":5,"phase":"start","fault":1099511627777,"name":"harness-stall","target":"harness"}`,
			FaultMeaning{ActsOn: ActsOnHarness}},
		{`{"type":"fault","at_ns":5,"phase":"start","fault":1,"name":"client-stall","target":"client-3","point":"cs:acquired"}`,
			FaultMeaning{ActsOn: ActsOnProcess, TargetClients: []int{3}}},
		{`{"type":"fault","at_ns":5,"phase":"start","fault":1,"name":"slow-release","target":"client-1","point":"cs:before-release"}`,
			FaultMeaning{ActsOn: ActsOnNetwork, TargetClients: []int{1}}},
		{`{"type":"fault","at_ns":5,"phase":"start","fault":1,"name":"something-new","target":"client-1"}`,
			FaultMeaning{TargetClients: []int{1}}},
	} {
		h, err := Read(strings.NewReader(`{"type":"meta"}` + "\n" + tc.line + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Events[0].Meaning(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\nmeaning %+v\nwant    %+v", tc.line, got, tc.want)
		}
		if got := h.Run().Faults[0].FaultMeaning; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: the fault span has %+v, want %+v", tc.line, got, tc.want)
		}
	}
	// A meta line's planned faults, old and new.
	for _, tc := range []struct {
		p    PlannedFault
		want FaultMeaning
	}{
		{PlannedFault{Kind: "client-crash"}, FaultMeaning{ActsOn: ActsOnProcess, Lasting: true}},
		{PlannedFault{Kind: "kill"}, FaultMeaning{ActsOn: ActsOnServers, Lasting: true}},
		{PlannedFault{Kind: "restart"}, FaultMeaning{ActsOn: ActsOnServers}},
		{PlannedFault{Kind: "kill", ActsOn: ActsOnNetwork}, FaultMeaning{ActsOn: ActsOnNetwork}},
	} {
		if got := tc.p.Meaning(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: meaning %+v, want %+v", tc.p, got, tc.want)
		}
	}
}
