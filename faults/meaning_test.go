package faults

import (
	"reflect"
	"slices"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// TestEveryKindMeans: every kind says what its occurrences act on, and for the kinds older
// histories know by name it says what their names meant there, so an old history and a new one
// of the same run are judged alike.
func TestEveryKindMeans(t *testing.T) {
	acts := []string{history.ActsOnServers, history.ActsOnClock, history.ActsOnNetwork, history.ActsOnProcess}
	for _, name := range KindNames() {
		k := kinds[name]
		if _, ok := k.(Meaner); !ok {
			t.Errorf("fault kind %s does not say what it means (add a Meaning method in meaning.go)", name)
			continue
		}
		m := MeaningOf(Spec{Kind: name})
		if !slices.Contains(acts, m.ActsOn) {
			t.Errorf("fault kind %s acts on %q, want one of %v", name, m.ActsOn, acts)
		}
		if old := history.KindMeaning(name); old.ActsOn != "" && !reflect.DeepEqual(m, old) {
			t.Errorf("fault kind %s means %+v, but its old history lines meant %+v", name, m, old)
		}
		tgt := Target{Spec: Spec{Kind: name}, Clients: []int{2}, Nodes: []string{"redis-1"}}
		if got := meaning(k, tgt); !slices.Equal(got.TargetClients, []int{2}) || !slices.Equal(got.TargetNodes, []string{"redis-1"}) {
			t.Errorf("fault kind %s's meaning does not carry its resolved targets: %+v", name, got)
		}
	}
}
