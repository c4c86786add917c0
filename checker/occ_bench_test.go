package checker

import (
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// manyFaults is a generated correct run of n operations with a client-pause every millisecond of it (1,760 of them).
func manyFaults(n int) *history.Run {
	h := generate(genConfig{Clients: 5, Ops: n, TTL: time.Second, Seed: 1})
	end := h.Events[len(h.Events)-1].AtNs
	var evs []history.Event
	id := int64(0)
	next := int64(0)
	for _, e := range h.Events {
		for next <= e.AtNs && next < end {
			id++
			evs = append(evs,
				history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: id, Rule: 1, Name: "client-pause", Target: "client-1", AtNs: next},
				history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: id, AtNs: next + int64(500*time.Microsecond)})
			next += int64(time.Millisecond)
		}
		evs = append(evs, e)
	}
	h.Events = evs
	h.Meta.Faults = []history.PlannedFault{{Kind: "client-pause"}}
	return h.Run()
}

// BenchmarkOccurrences: the danger windows of a run with many faults (each measured to the
// writes of the holders granted inside it: extend). 100,000 operations and 1,752 faults: 498 ms a
// call walking every operation for each fault, 25 ms with the grants indexed (2-core machine,
// 2026-11-29).
func BenchmarkOccurrences(b *testing.B) {
	r := newRun(manyFaults(100_000), Options{})
	b.ResetTimer()
	for range b.N {
		r.gw = nil
		if len(r.occurrences()) == 0 {
			b.Fatal("no occurrence")
		}
	}
}
