package faults_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/faults"
)

// TestSpecValidate checks that every bad spec is rejected with an error naming the field, and
// that good specs pass.
func TestSpecValidate(t *testing.T) {
	neg := ms(-time.Second)
	for _, tc := range []struct {
		name string
		spec faults.Spec
		want string // "" = valid; else words the error must contain
	}{
		{"unknown kind", faults.Spec{Kind: "meteor"}, `kind "meteor" is unknown`},
		{"empty kind", faults.Spec{}, `kind "" is unknown`},
		{"negative at", faults.Spec{Kind: "kill", Nodes: "master", At: neg}, "at is negative"},
		{"negative every", faults.Spec{Kind: "kill", Nodes: "master", Every: neg}, "every is negative"},
		{"negative for", faults.Spec{Kind: "partition", For: faults.Fixed(time.Duration(neg))}, "for is negative"},
		{"negative jitter", faults.Spec{Kind: "latency", Amount: sz(time.Second), Jitter: neg}, "jitter is negative"},
		{"negative latency", faults.Spec{Kind: "latency", Amount: faults.Fixed(time.Duration(neg))}, "amount is negative"},
		{"zero latency", faults.Spec{Kind: "latency"}, "amount must be > 0"},
		{"negative skip", faults.Spec{Kind: "kill", Point: "p", Skip: -1}, "skip"},
		{"times below -1", faults.Spec{Kind: "kill", Times: -2}, "times"},
		{"client-pause without point", faults.Spec{Kind: "client-pause", For: sz(time.Second)}, "needs a point"},
		{"client-pause without for", faults.Spec{Kind: "client-pause", Point: "cs:before-write"}, "for must be > 0"},
		{"client-crash without point", faults.Spec{Kind: "client-crash"}, "needs a point"},
		{"slow-release without amount", faults.Spec{Kind: "slow-release", Point: "cs:before-release"}, "amount must be > 0"},
		{"clock-skew without amount", faults.Spec{Kind: "clock-skew", Clients: "1"}, "amount must be set"},
		{"clock-jump without nodes", faults.Spec{Kind: "clock-jump", Amount: sz(time.Second)}, "nodes must be set"},
		{"clock-jump backwards", faults.Spec{Kind: "clock-jump", Nodes: "master", Amount: faults.Fixed(time.Duration(neg))}, "amount is negative"},
		{"bad stream", faults.Spec{Kind: "partition-oneway", Stream: "sideways"}, `stream "sideways"`},
		{"client without point", faults.Spec{Kind: "partition", Client: 2}, "client is only meaningful with point"},
		{"negative client", faults.Spec{Kind: "partition", Point: "p", Client: -1}, "client is -1"},
		{"clients zero", faults.Spec{Kind: "partition", Clients: "0"}, `clients "0"`},
		{"clients backwards range", faults.Spec{Kind: "partition", Clients: "3-2"}, `clients "3-2"`},
		{"clients not numbers", faults.Spec{Kind: "partition", Clients: "first"}, `clients "first"`},
		{"clients trigger without point", faults.Spec{Kind: "partition", Clients: "trigger"}, `clients "trigger" needs point`},
		{"clients others without point", faults.Spec{Kind: "latency", Amount: sz(time.Second), Clients: "others"}, `clients "others" needs point`},

		{"clock-skew behind", faults.Spec{Kind: "clock-skew", Clients: "2", Amount: faults.Fixed(time.Duration(neg))}, ""},
		{"client-pause", faults.Spec{Kind: "client-pause", Point: "cs:before-write", For: sz(time.Second)}, ""},
		{"partition list", faults.Spec{Kind: "partition", Clients: "1, 3,4-5", Nodes: "redis-1"}, ""},
		{"partition others", faults.Spec{Kind: "partition", Point: "cs:acquired", Clients: "others"}, ""},
		{"latency upstream", faults.Spec{Kind: "latency", Amount: sz(time.Second), Stream: "upstream", Every: ms(time.Second), Times: -1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate(%+v) = %v, want nil", tc.spec, err)
			case tc.want != "" && err == nil:
				t.Errorf("Validate(%+v) = nil, want an error about %q", tc.spec, tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("Validate(%+v) = %q, want it to say %q", tc.spec, err, tc.want)
			}
		})
	}
}

// TestNewChecksClientsAgainstTheRun checks that New rejects client numbers the run does not have,
// which Validate alone cannot know, instead of letting the fault fail when it fires.
func TestNewChecksClientsAgainstTheRun(t *testing.T) {
	env := &testEnv{clients: 3} // New does not touch the cluster
	for _, tc := range []struct {
		spec faults.Spec
		want string
	}{
		{faults.Spec{Kind: "partition", Clients: "2-5"}, `clients "2-5": want trigger, others, all, random, or numbers 1..3`},
		{faults.Spec{Kind: "clock-skew", Clients: "4", Amount: sz(time.Second)}, `clients "4"`},
		{faults.Spec{Kind: "client-pause", Point: "p", Client: 4, For: sz(time.Second)}, "client is 4"},
	} {
		_, err := faults.New(env, []faults.Spec{{Kind: "kill", Nodes: "master", At: ms(time.Second)}, tc.spec}, faults.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "fault 2:") {
			t.Errorf("New with %+v = %v, want an error about fault 2 saying %q", tc.spec, err, tc.want)
		}
	}
	if _, err := faults.New(env, []faults.Spec{{Kind: "partition", Clients: "1-3"}}, faults.Options{}); err != nil {
		t.Errorf("New with clients 1-3 of 3: %v", err)
	}
}

// TestSpecJSON checks that a spec reads durations as strings and names the bad one.
func TestSpecJSON(t *testing.T) {
	var s faults.Spec
	if err := json.Unmarshal([]byte(`{"kind":"client-pause","point":"cs:before-write","for":"1.2s"}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.For.D() != 1200*time.Millisecond || s.Validate() != nil {
		t.Errorf("decoded %+v (valid: %v)", s, s.Validate())
	}
	b, _ := json.Marshal(s)
	if !strings.Contains(string(b), `"for":"1.2s"`) {
		t.Errorf("encoded %s", b)
	}
	err := json.Unmarshal([]byte(`{"kind":"latency","amount":"fast"}`), &s)
	if err == nil || !strings.Contains(err.Error(), `"fast"`) {
		t.Errorf("bad duration: %v", err)
	}
}
