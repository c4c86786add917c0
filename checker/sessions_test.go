package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// TestDeadHoldersSessionEnds: a session lock (no TTL) whose holder crashed may go to another
// client — the server ended the dead process's session — and that grant is legal; the same grant
// with the holder alive, or under a lease the server times, is illegal.
func TestDeadHoldersSessionEnds(t *testing.T) {
	build := func(ttl int64, crash bool) *history.History {
		b := newHB("pg-advisory", 500*time.Millisecond)
		b.h.Meta.Faults = []history.PlannedFault{{Kind: "client-crash", ActsOn: history.ActsOnProcess, Lasting: true}}
		a1 := b.acquire(1, 0, 1)
		b.h.Events[len(b.h.Events)-1].TTLNs = ttl
		b.read(1, a1, 2, 3, 0)
		b.write(1, a1, 4, 5, 1)
		b.value = 1
		if crash {
			b.fault++
			b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: b.fault, Rule: 1, Name: "client-crash",
				Target: "client-1", AtNs: at(10), FaultMeaning: history.FaultMeaning{ActsOn: history.ActsOnProcess, Lasting: true,
					TargetClients: []int{1}}})
		}
		// Client 1 never releases; client 2 is granted at 50 ms, inside a 500 ms lease.
		for i := range 5 {
			a := b.acquire(2, float64(50+20*i), float64(51+20*i))
			b.h.Events[len(b.h.Events)-1].TTLNs = ttl
			b.read(2, a, float64(52+20*i), float64(53+20*i), b.value)
			b.write(2, a, float64(54+20*i), float64(55+20*i), b.value+1)
			b.value++
			b.release(2, a, float64(56+20*i), float64(57+20*i))
		}
		return b.history()
	}
	for _, tc := range []struct {
		name  string
		ttl   int64
		crash bool
		want  Verdict
	}{
		{"session lock, holder crashed", history.NoTTL, true, Safe},
		{"session lock, holder alive", history.NoTTL, false, Unsafe},
		{"lease, holder crashed", 0, true, Unsafe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := CheckHistory(build(tc.ttl, tc.crash), Options{}).Result
			if r.Verdict != tc.want {
				t.Errorf("%s (%s; %s), want %s", r.Verdict, r.DecidedBy, strings.Join(r.Warnings, "; "), tc.want)
			}
		})
	}
}

// TestIdleTimeoutNamedAsCause: with the servers' session idle timeout in the meta line, a session
// lock granted away while its holder had recorded nothing for that long names the timeout as the
// cause; granted away sooner, it does not.
func TestIdleTimeoutNamedAsCause(t *testing.T) {
	build := func(grantAt float64) *history.History {
		b := newHB("pg-advisory", 500*time.Millisecond)
		b.h.Meta.ServerIdleTimeoutNs = int64(time.Second)
		a1 := b.acquire(1, 0, 1)
		b.h.Events[len(b.h.Events)-1].TTLNs = history.NoTTL
		b.read(1, a1, 2, 3, 0)
		a2 := b.acquire(2, 4, grantAt)
		b.h.Events[len(b.h.Events)-1].TTLNs = history.NoTTL
		b.read(2, a2, grantAt+1, grantAt+2, 0)
		return b.history()
	}
	for _, tc := range []struct {
		grant float64
		named bool
	}{{1100, true}, {500, false}} {
		r := CheckHistory(build(tc.grant), Options{}).Result
		if r.FirstViolation == nil {
			t.Fatalf("grant at %v ms: %s, want the illegal grant", tc.grant, r.Verdict)
		}
		if got := strings.Contains(r.FirstViolation.Cause, "the server ends sessions idle for 1 s"); got != tc.named {
			t.Errorf("grant at %v ms: cause %q, idle timeout named %v, want %v", tc.grant, r.FirstViolation.Cause, got, tc.named)
		}
	}
}

// TestNoStallWhileHeld: waiting for a holder whose lease still runs is contention, not a stall;
// once the holder releases (or its lease runs out) with no grant after it, the waiting is a stall,
// and a long one makes the run stuck.
func TestNoStallWhileHeld(t *testing.T) {
	build := func(release bool) *history.History {
		b := newHB("token", 2*time.Second)
		b.h.Meta.StuckAfterNs = int64(time.Second)
		a1 := b.acquire(1, 0, 100)
		b.read(1, a1, 101, 102, 0)
		if release {
			b.release(1, a1, 200, 201)
		}
		// Client 2 waits from 50 ms; its acquire gives up at 1.9 s, unanswered at the end.
		b.op(history.OpAcquire, 2, 0, 50, history.TypeFail, 1900, nil, "timeout")
		return b.history()
	}
	for _, release := range []bool{false, true} {
		r := CheckHistory(build(release), Options{}).Result
		if stuck := r.Verdict == Stuck; stuck != release {
			t.Errorf("holder releases %v: %s (%s), want stuck %v", release, r.Verdict, r.DecidedBy, release)
		}
	}
}
