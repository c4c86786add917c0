package checker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// acquireSent records an ok acquire whose winning attempt was sent at sent (sent_ns).
func (b *hb) acquireSent(client int, call, sent, ret float64, validity time.Duration) int64 {
	b.id++
	b.add(history.Event{Type: history.TypeInvoke, ID: b.id, Op: history.OpAcquire, Client: client, Lock: "lock", AtNs: at(call)})
	b.add(history.Event{Type: history.TypeOk, ID: b.id, AtNs: at(ret), SentNs: at(sent), ValidityNs: int64(validity)})
	return b.id
}

func TestEvidence(t *testing.T) {
	pause := history.PlannedFault{Kind: "client-pause", Point: "cs:before-write", ForNs: int64(600 * time.Millisecond)}
	cases := []struct {
		name     string
		build    func() *history.History
		verdict  Verdict
		evidence string // a substring of Result.Evidence
	}{
		{"no write at all is unknown", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			for i, c := range []int{1, 2, 1, 2} {
				a := b.acquire(c, float64(i*10), float64(i*10+1))
				b.release(c, a, float64(i*10+2), float64(i*10+3))
			}
			return b.history()
		}, Unknown, "no client wrote"},
		{"one client alone is unknown", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			b.cs(1, 0)
			b.cs(1, 10)
			return b.history()
		}, Unknown, "only one client"},
		{"contended baseline is safe", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			b.cs(1, 0)
			b.cs(2, 10)
			return b.history()
		}, Safe, EvidenceOK},
		{"a planned fault that never fired is unknown, with its reason", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			b.h.Meta.Faults = []history.PlannedFault{pause}
			b.cs(1, 0)
			b.cs(2, 10)
			b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseUnfired, Rule: 1, Name: "client-pause",
				Point: "cs:before-write", Detail: "no client reached its point cs:before-write", AtNs: at(30)})
			return b.history()
		}, Unknown, "fault 1 (client-pause) never fired: no client reached its point"},
		{"a planned fault with no record at all is unknown", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			b.h.Meta.Faults = []history.PlannedFault{pause}
			b.cs(1, 0)
			b.cs(2, 10)
			return b.history()
		}, Unknown, "no record of it firing"},
		{"a fault with no write in its danger window is unknown", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			b.h.Meta.Faults = []history.PlannedFault{pause}
			b.cs(1, 0)
			b.cs(2, 10)
			b.h.Events = append(b.h.Events, history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Rule: 1,
				Name: "client-pause", Target: "client-1", AtNs: at(3000)}, history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1, AtNs: at(3600)})
			b.cs(2, 5000) // after the window: 3000 → 3600 + 500
			return b.history()
		}, Unknown, "no write in the danger window"},
		// A holder granted inside the window writes after its fixed end (a lease after the heal):
		// its write is the evidence (etcd's partition: granted at 1.4 s, hold 2.5 s).
		{"a late write under a grant made in the window is evidence", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			b.h.Meta.Faults = []history.PlannedFault{pause}
			b.cs(1, 0)
			b.h.Events = append(b.h.Events, history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Rule: 1,
				Name: "client-pause", Target: "client-1", AtNs: at(20)}, history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1, AtNs: at(620)})
			a := b.acquire(2, 1000, 1050) // inside the window, which ends at 620 + 500
			b.write(2, a, 3500, 3501, 1)
			b.release(2, a, 3502, 3503)
			return b.history()
		}, Safe, EvidenceOK},
		{"a write under a grant made after the window is not", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			b.h.Meta.Faults = []history.PlannedFault{pause}
			b.cs(1, 0)
			b.h.Events = append(b.h.Events, history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Rule: 1,
				Name: "client-pause", Target: "client-1", AtNs: at(20)}, history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1, AtNs: at(620)})
			a := b.acquire(2, 1000, 1200) // the window ended at 1120
			b.write(2, a, 3500, 3501, 1)
			b.release(2, a, 3502, 3503)
			return b.history()
		}, Unknown, "no write in the danger window"},
		{"a write and another client's grant in the window is evidence", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			b.h.Meta.Faults = []history.PlannedFault{pause}
			b.cs(1, 0)
			b.h.Events = append(b.h.Events, history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Rule: 1,
				Name: "client-pause", Target: "client-1", AtNs: at(20)}, history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1, AtNs: at(620)})
			b.cs(2, 700)
			return b.history()
		}, Safe, EvidenceOK},
		// docs/design.md#faults-sized-to-the-lease: a fault whose until never happened put nothing at risk, however many
		// writes and grants its window holds: never safe.
		{"an until that never happened is unknown, never safe", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			b.h.Meta.Faults = []history.PlannedFault{{Kind: "client-stall", Point: "cs:acquired"}}
			b.cs(1, 0)
			b.h.Events = append(b.h.Events, history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Rule: 1,
				Name: "client-stall", Target: "client-1", AtNs: at(20)}, history.Event{Type: history.TypeFault, Phase: history.PhaseEnd,
				Fault: 1, AtNs: at(270), Missed: "no other client reached cs:before-read in the 250ms it lasted: its cap or the fault phase ran out first"})
			b.cs(2, 300)
			return b.history()
		}, Unknown, "fault 1 (client-stall) never made the moment it aims at: no other client reached cs:before-read"},
		{"a fault shorter than the lease it must outlast is unknown, never safe", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			b.h.Meta.Faults = []history.PlannedFault{pause}
			b.cs(1, 0)
			// A pause of 900 ms (the catalogue's at a 500 ms lease) under a lock that holds 1 s.
			b.h.Events = append(b.h.Events, history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Rule: 1,
				Name: "client-pause", Target: "client-1", AtNs: at(20), OutlastNs: int64(time.Second)},
				history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1, AtNs: at(920)})
			b.cs(2, 950)
			return b.history()
		}, Unknown, "it lasted 900 ms, less than the lease it must outlast (1 s)"},
		{"a fault that outlasted the lease and made its moment is evidence", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			b.h.Meta.Faults = []history.PlannedFault{pause}
			b.cs(1, 0)
			b.h.Events = append(b.h.Events, history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Rule: 1,
				Name: "client-pause", Target: "client-1", AtNs: at(20), OutlastNs: int64(500 * time.Millisecond)},
				history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1, AtNs: at(920)})
			b.cs(2, 950)
			return b.history()
		}, Safe, EvidenceOK},
		{"the faulted client's own grant does not contend", func() *history.History {
			b := newHB("token", 500*time.Millisecond)
			b.h.Meta.Faults = []history.PlannedFault{pause}
			b.cs(2, 0)
			b.h.Events = append(b.h.Events, history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Rule: 1,
				Name: "client-pause", Target: "client-1", AtNs: at(20)}, history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1, AtNs: at(620)})
			b.cs(1, 700)
			return b.history()
		}, Unknown, "no other client was granted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := CheckHistory(tc.build(), Options{}).Result
			for _, n := range []int{1, 3} {
				sameAsWhole(t, tc.build(), n) // in segments, the evidence is the same
			}
			if r.Verdict != tc.verdict || !strings.Contains(r.Evidence, tc.evidence) {
				t.Fatalf("verdict %s, evidence %q; want %s with %q (decided by %q)", r.Verdict, r.Evidence, tc.verdict, tc.evidence, r.DecidedBy)
			}
			if r.Verdict == Unknown && !strings.Contains(r.DecidedBy, r.Evidence) {
				t.Errorf("decided_by %q does not say what is missing (%q)", r.DecidedBy, r.Evidence)
			}
		})
	}
}

// The slow-release case of issue 15: client 3's acquire spun from 2 ms and its winning SET was
// sent at 960 ms, after client 5's grant at 819.8 ms (TTL 500 ms) and client 1's late DEL at
// 950 ms. Without sent_ns the grant could be placed at 2 ms and the overlap blamed on client 5;
// with it the grant is illegal and the DEL is named as the cause.
func TestPreciseGrantClass(t *testing.T) {
	build := func(sent float64) *history.History {
		b := newHB("setnx-px", 500*time.Millisecond)
		a1 := b.acquire(1, 0, 1)
		b.read(1, a1, 2, 3, 0)
		b.write(1, a1, 4, 5, 1)
		b.value = 1
		b.acquireSent(3, 2, sent, 965, 500*time.Millisecond)
		a5 := b.acquireSent(5, 600, 819, 819.8, 500*time.Millisecond)
		b.read(5, a5, 820, 821, 1)
		b.release(1, a1, 950, 951) // client 1's late DEL removes client 5's key
		b.write(5, a5, 970.7, 971, 2)
		return b.history()
	}
	r := CheckHistory(build(960), Options{}).Result
	if r.Verdict != Unsafe || r.ViolationClass == nil || *r.ViolationClass != ServiceClass {
		t.Fatalf("with sent_ns: verdict %s class %v, want unsafe service (first %+v)", r.Verdict, r.ViolationClass, r.FirstViolation)
	}
	if c := r.FirstViolation.Cause; !strings.Contains(c, "client 1's") || !strings.Contains(c, "release") || !strings.Contains(c, "removed client 5's key") {
		t.Errorf("cause %q does not name client 1's release", c)
	}
	if !strings.Contains(r.DecidedBy, "illegal grant") || !strings.Contains(r.DecidedBy, "client 1's") {
		t.Errorf("decided_by %q", r.DecidedBy)
	}
}

func TestFenceRegressions(t *testing.T) {
	b := newHB("token+fence", time.Second)
	b.h.Meta.Fencing = true
	fenced := func(client int, t0 float64, fence uint64) {
		b.id++
		a := b.id
		b.add(history.Event{Type: history.TypeInvoke, ID: a, Op: history.OpAcquire, Client: client, Lock: "lock", AtNs: at(t0)})
		b.add(history.Event{Type: history.TypeOk, ID: a, AtNs: at(t0 + 1), Fence: fence})
		b.read(client, a, t0+2, t0+3, b.value)
		b.id++
		b.add(history.Event{Type: history.TypeInvoke, ID: b.id, Op: history.OpWrite, Client: client, Acq: a, AtNs: at(t0 + 4), Value: history.Int64(b.value + 1), Fence: fence})
		b.add(history.Event{Type: history.TypeOk, ID: b.id, AtNs: at(t0 + 5)})
		b.value++
		b.release(client, a, t0+6, t0+7)
	}
	fenced(1, 0, 7)
	fenced(2, 10, 8)
	fenced(3, 20, 8) // a second holder given the same fence
	fenced(1, 30, 9)
	// The same client given its fence again, no other holder between: etcd's Mutex does so when
	// a release failed and the session's key is still there (one holder all along).
	fenced(1, 40, 9)
	r := CheckHistory(b.history(), Options{}).Result
	if r.FenceRegressions != 1 || r.Verdict != Unsafe || r.FirstViolation.Kind != "fence-regression" {
		t.Fatalf("fence_regressions %d, verdict %s, first %+v; want 1 regression deciding unsafe", r.FenceRegressions, r.Verdict, r.FirstViolation)
	}
	if f := r.FirstViolation; f.A.Client != 2 || f.B.Client != 3 {
		t.Errorf("first regression between clients %d and %d, want 2 and 3 (client 1's own fence again is none)", f.A.Client, f.B.Client)
	}
}

// A write after the holder's own validity is the client's fault, whatever the grants.
func TestExpiredWriteIsClientClass(t *testing.T) {
	b := newHB("redlock", 500*time.Millisecond)
	a := b.acquireSent(1, 0, 0, 1, 100*time.Millisecond) // validity 100 ms of a 500 ms TTL
	b.read(1, a, 2, 3, 0)
	b2 := b.acquireSent(2, 150, 150, 160, 500*time.Millisecond) // illegal: client 1's TTL ran to ~495 ms
	b.read(2, b2, 161, 162, 0)
	b.write(1, a, 170, 171, 1) // client 1 writes 70 ms after its validity ended
	b.write(2, b2, 172, 173, 1)
	r := CheckHistory(b.history(), Options{}).Result
	if r.ExpiredWrites != 1 {
		t.Errorf("expired_writes %d, want 1", r.ExpiredWrites)
	}
	var excl *Violation
	for _, v := range CheckHistory(b.history(), Options{}).Analysis.Violations {
		if v.Kind == "exclusion" {
			excl = &v
			break
		}
	}
	if excl == nil || excl.Class != ClientClass || !strings.Contains(excl.Cause, "after its own validity ended") {
		t.Fatalf("exclusion violation %+v, want client class naming the expired write", excl)
	}
}

// TestBlameAndHeld: a violation names the faults whose danger window was open at it (a fault
// that healed more than a lease before it is not among them), and held_ms is the union of the
// holding windows, overlaps counted once.
func TestBlameAndHeld(t *testing.T) {
	b := newHB("token", 100*time.Millisecond)
	b.faultSpan("client-pause", 0, 5, "")     // danger until 105 ms: over before the overlap
	b.faultSpan("partition", 200, 400, "")    // open at the overlap
	b.faultSpan("client-pause", 250, 260, "") // open too
	a := b.acquire(1, 300, 301)
	b.write(1, a, 302, 320, 1) // client 1 holds 301..320
	c := b.acquire(2, 305, 306)
	b.write(2, c, 307, 330, 1) // client 2 from 306: an overlap at 306, union 301..330
	b.release(1, a, 331, 332)
	b.release(2, c, 333, 334)
	out := CheckHistory(b.history(), Options{})
	if out.Result.Verdict != Unsafe || len(out.Analysis.Violations) == 0 {
		t.Fatalf("verdict %s with %d violations, want unsafe", out.Result.Verdict, len(out.Analysis.Violations))
	}
	for _, v := range out.Analysis.Violations {
		if !slices.Equal(v.Faults, []int64{2, 3}) {
			t.Errorf("%s violation at %.1f ms blames faults %v, want [2 3]", v.Kind, v.AtMs, v.Faults)
		}
	}
	if got := out.Result.HeldMs; got != 29 {
		t.Errorf("held_ms %v, want 29 (301 to 330)", got)
	}
}
