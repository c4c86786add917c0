package faults

import (
	"fmt"
	"testing"
)

// TestNeeds: what a fault needs of the cluster, on which nodes, before it may run on a backend
// that lacks controls (external).
func TestNeeds(t *testing.T) {
	nodes := []string{"redis-1", "redis-2", "redis-3"}
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "partition", Point: "cs:acquired", Clients: "trigger"}, "[{redis-1 toxiproxy} {redis-2 toxiproxy} {redis-3 toxiproxy}]"},
		{Spec{Kind: "latency", Nodes: "redis-2", Amount: Fixed(1)}, "[{redis-2 toxiproxy}]"},
		{Spec{Kind: "latency", Nodes: "minority", Amount: Fixed(1)}, "[{redis-1 toxiproxy} {redis-2 toxiproxy} {redis-3 toxiproxy}]"},
		{Spec{Kind: "client-pause", Point: "cs:before-write", Nodes: "redis-1"}, "[{redis-1 toxiproxy} {redis-2 toxiproxy} {redis-3 toxiproxy}]"},
		{Spec{Kind: "restart", Point: "cs:acquired", Nodes: "master"}, "[{redis-1 restart} {redis-2 restart} {redis-3 restart}]"},
		{Spec{Kind: "restart", Nodes: "redis-3", For: Fixed(1)}, "[{redis-3 kill} {redis-3 restart}]"},
		{Spec{Kind: "kill", Nodes: "redis-1,redis-2"}, "[{redis-1 kill} {redis-2 kill}]"},
		{Spec{Kind: "pause-server", Nodes: "leader"}, "[{redis-1 pause} {redis-2 pause} {redis-3 pause}]"},
		{Spec{Kind: "failover", Nodes: "master"}, "[{redis-1 replication}]"},
		{Spec{Kind: "clock-jump", Nodes: "master", Amount: Fixed(1)}, "[]"},
		{Spec{Kind: "clock-skew", Amount: Fixed(1)}, "[]"},
	} {
		got := fmt.Sprint(Needs(tc.spec, nodes))
		if got == "[]" && tc.want == "[]" {
			continue
		}
		if got != tc.want {
			t.Errorf("Needs(%s nodes=%q) = %s, want %s", tc.spec.Kind, tc.spec.Nodes, got, tc.want)
		}
	}
	// Every kind that acts on the cluster says what it needs: a new kind must not slip through
	// the external backend's check unnoticed.
	free := map[string]bool{"clock-jump": true, "clock-skew": true}
	for _, k := range KindNames() {
		if _, ok := kinds[k].(needer); !ok && !free[k] {
			t.Errorf("fault kind %s does not say what it needs (add a needs method in its file)", k)
		}
	}
}
