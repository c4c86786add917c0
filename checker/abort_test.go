package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// A run the history says ended early (its abort line) is judged on what it recorded: a violation
// stays unsafe, anything else is unknown, decided by why it ended — whoever reads the history.
func TestAbortedRun(t *testing.T) {
	const why = "client 2 broke the protocol: answered id 42"
	safe := func() *hb {
		b := newHB("token", time.Second)
		b.h.Meta.Expected = "safe"
		for i := range 10 {
			b.cs(i%2+1, float64(i*100))
		}
		return b
	}
	if r := CheckHistory(safe().history(), Options{}).Result; r.Verdict != Safe {
		t.Fatalf("the run without its abort line: %s (%s), want safe", r.Verdict, r.DecidedBy)
	}
	b := safe()
	b.add(history.Event{Type: history.TypeAbort, AtNs: at(950), Error: why})
	r := CheckHistory(b.history(), Options{}).Result
	if r.Verdict != Unknown || r.DecidedBy != "the run ended early: "+why || r.TTDMs != nil || r.FirstViolation != nil ||
		r.Matches == nil || *r.Matches || !strings.Contains(strings.Join(r.Warnings, "\n"), why) {
		t.Errorf("aborted safe run: %s, decided by %q, ttd %v, matches %v, warnings %q", r.Verdict, r.DecidedBy, r.TTDMs, r.Matches, r.Warnings)
	}

	// The holder's lease is still valid when client 2 is granted: unsafe, aborted or not.
	b = newHB("token", time.Second)
	a1 := b.acquire(1, 0, 1)
	a2 := b.acquire(2, 2, 3)
	b.write(1, a1, 4, 5, 1)
	b.write(2, a2, 6, 7, 1)
	b.add(history.Event{Type: history.TypeAbort, AtNs: at(8), Error: why})
	if r := CheckHistory(b.history(), Options{}).Result; r.Verdict != Unsafe || r.TTDMs == nil {
		t.Errorf("aborted unsafe run: %s (%s), want unsafe with its TTD", r.Verdict, r.DecidedBy)
	}

	// Read in segments, the abort line decides the same.
	h := generate(genConfig{Clients: 4, Ops: 3000, TTL: time.Second, Seed: 9})
	h.Events = append(h.Events, history.Event{Type: history.TypeAbort, AtNs: h.Events[len(h.Events)/2].AtNs, Error: why})
	if !sameAsWhole(t, h, 100) {
		t.Errorf("the aborted history was not checked in segments: the test proves less than it says")
	}
}
