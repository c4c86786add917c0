package checker

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// want is what a case expects of the result; a nil pointer field is not checked.
type want struct {
	verdict    Verdict
	class      *Class // nil: expect no violation_class
	classes    []Class
	exclusion  *int
	service    *int
	lost       *int
	stale      *int
	lockCheck  string
	resCheck   string
	stuckStall bool
}

func ip(n int) *int     { return &n }
func cp(c Class) *Class { return &c }

func TestCheckHistories(t *testing.T) {
	cases := []struct {
		name  string
		build func() *history.History
		want  want
	}{
		{"safe serial", func() *history.History {
			b := newHB("token", time.Second)
			for i := range 20 {
				b.cs(i%3+1, float64(i*10))
			}
			return b.history()
		}, want{verdict: Safe, exclusion: ip(0), service: ip(0), lost: ip(0), lockCheck: "Ok", resCheck: "Ok"}},

		{"contended but safe: waiters granted after each release", func() *history.History {
			b := newHB("token", time.Second)
			// Three clients ask at once; each is granted after the previous release.
			a1 := b.acquire(1, 0, 1)
			a2 := b.acquire(2, 0, 9)
			a3 := b.acquire(3, 0, 17)
			for i, a := range []int64{a1, a2, a3} {
				s := float64(i * 8)
				b.read(i+1, a, s+2, s+3, int64(i))
				b.write(i+1, a, s+4, s+5, int64(i+1))
				b.release(i+1, a, s+6, s+7)
			}
			return b.history()
		}, want{verdict: Safe, exclusion: ip(0), service: ip(0), lost: ip(0), lockCheck: "Ok", resCheck: "Ok"}},

		{"client class: lease expired, old holder wrote late", func() *history.History {
			b := newHB("token", 100*time.Millisecond)
			a := b.acquire(1, 0, 1)
			b.read(1, a, 2, 3, 0)
			// client 1 pauses; its lease (100ms) expires and client 2 is granted legally.
			c := b.acquire(2, 5, 120)
			b.read(2, c, 121, 122, 0)
			b.write(2, c, 123, 124, 1)
			b.release(2, c, 125, 126)
			b.write(1, a, 150, 151, 1) // late write with the expired lease
			b.op(history.OpRelease, 1, a, 152, history.TypeFail, 153, nil, "not held")
			return b.history()
		}, want{verdict: Unsafe, class: cp(ClientClass), classes: []Class{ClientClass}, exclusion: ip(1), service: ip(0), lost: ip(1),
			lockCheck: "Ok", resCheck: "Illegal"}},

		{"service class: grant while the lease was valid", func() *history.History {
			b := newHB("redlock", time.Second)
			a := b.acquire(1, 0, 1)
			b.read(1, a, 2, 3, 0)
			c := b.acquire(2, 5, 10) // granted 10ms into a 1s lease: a restart or failover lost the key
			b.read(2, c, 11, 12, 0)
			b.write(2, c, 13, 14, 1)
			b.write(1, a, 20, 21, 1)
			b.release(2, c, 22, 23)
			b.release(1, a, 24, 25)
			return b.history()
		}, want{verdict: Unsafe, class: cp(ServiceClass), classes: []Class{ServiceClass}, exclusion: ip(1), service: ip(1), lost: ip(1),
			lockCheck: "Illegal", resCheck: "Illegal"}},

		{"slow release: a late plain DEL frees the next holder's lock", func() *history.History {
			b := newHB("setnx-px", 100*time.Millisecond)
			a := b.acquire(1, 0, 1)
			b.read(1, a, 2, 3, 0)
			b.write(1, a, 4, 5, 1)
			// client 1's release is delayed past its TTL; client 2 is granted legally after expiry.
			c := b.acquire(2, 95, 110)
			b.read(2, c, 111, 112, 1)
			b.release(1, a, 6, 130) // the DEL lands at ~130ms and removes client 2's key
			d := b.acquire(3, 20, 135)
			b.read(3, d, 136, 137, 1)
			b.write(3, d, 138, 139, 2)
			b.write(2, c, 140, 141, 2) // client 2 still holds a valid lease and writes
			b.release(3, d, 142, 143)
			b.release(2, c, 144, 145)
			return b.history()
		}, want{verdict: Unsafe, class: cp(ServiceClass), classes: []Class{ServiceClass}, service: ip(1), exclusion: ip(1), lost: ip(1),
			lockCheck: "Illegal"}},

		{"client pause then plain DEL: both classes, client first", func() *history.History {
			b := newHB("setnx-px", 100*time.Millisecond)
			a := b.acquire(1, 0, 1)
			b.read(1, a, 2, 3, 0)
			c := b.acquire(2, 5, 110) // legal: a expired
			b.read(2, c, 111, 112, 0)
			b.write(1, a, 115, 116, 1) // paused holder writes late: client class
			b.release(1, a, 117, 118)  // plain DEL removes client 2's key
			d := b.acquire(3, 20, 120) // illegal: c's lease is valid until ≥ 104ms+
			b.read(3, d, 121, 122, 1)
			b.write(3, d, 123, 124, 2)
			b.write(2, c, 125, 126, 1)
			b.release(3, d, 127, 128)
			b.release(2, c, 129, 130)
			return b.history()
		}, want{verdict: Unsafe, class: cp(ClientClass), classes: []Class{ClientClass, ServiceClass}, service: ip(1), lockCheck: "Illegal"}},

		{"lost update counted", func() *history.History {
			b := newHB("setnx-px", 100*time.Millisecond)
			a := b.acquire(1, 0, 1)
			b.read(1, a, 2, 3, 0)
			c := b.acquire(2, 5, 105)
			b.read(2, c, 106, 107, 0)
			b.write(2, c, 108, 109, 1)
			b.write(1, a, 110, 111, 1)
			b.release(2, c, 112, 113)
			d := b.acquire(3, 114, 115)
			b.read(3, d, 116, 117, 1)
			b.write(3, d, 118, 119, 2)
			b.release(3, d, 120, 121)
			return b.history()
		}, want{verdict: Unsafe, class: cp(ClientClass), lost: ip(1), resCheck: "Illegal", lockCheck: "Ok"}},

		{"fenced stale write rejected, no lost update", func() *history.History {
			b := newHB("token+fence", 100*time.Millisecond)
			b.h.Meta.Fencing = true
			a := b.acquire(1, 0, 1)
			b.read(1, a, 2, 3, 0)
			c := b.acquire(2, 5, 110)
			b.read(2, c, 111, 112, 0)
			b.write(2, c, 113, 114, 1)
			b.release(2, c, 115, 116)
			b.op(history.OpWrite, 1, a, 120, history.TypeFail, 121, history.Int64(1), "stale fence 1 < 2")
			return b.history()
		}, want{verdict: Unsafe, class: cp(ClientClass), exclusion: ip(1), lost: ip(0), stale: ip(1), lockCheck: "Ok", resCheck: "Ok"}},

		{"unknown acquire that may have succeeded", func() *history.History {
			b := newHB("token", time.Second)
			b.op(history.OpAcquire, 1, 0, 0, history.TypeInfo, 50, nil, "i/o timeout")
			b.op(history.OpAcquire, 4, 0, 0, "", 0, nil, "") // never completed
			b.cs(2, 60)
			b.cs(3, 70)
			return b.history()
		}, want{verdict: Safe, exclusion: ip(0), service: ip(0), lockCheck: "Ok", resCheck: "Ok"}},

		{"unknown release may have freed the lock", func() *history.History {
			b := newHB("token", time.Second)
			a := b.acquire(1, 0, 1)
			b.read(1, a, 2, 3, 0)
			b.write(1, a, 4, 5, 1)
			b.op(history.OpRelease, 1, a, 6, history.TypeInfo, 500, nil, "i/o timeout")
			c := b.acquire(2, 7, 8)
			b.read(2, c, 9, 10, 1)
			b.write(2, c, 11, 12, 2)
			b.release(2, c, 13, 14)
			return b.history()
		}, want{verdict: Safe, service: ip(0), lockCheck: "Ok", resCheck: "Ok"}},

		{"release of an expired lease fails: legal", func() *history.History {
			b := newHB("token", 100*time.Millisecond)
			a := b.acquire(1, 0, 1)
			b.read(1, a, 2, 3, 0)
			b.write(1, a, 4, 5, 1)
			c := b.acquire(2, 6, 120)
			b.op(history.OpRelease, 1, a, 121, history.TypeFail, 122, nil, "lock not held")
			b.read(2, c, 123, 124, 1)
			b.write(2, c, 125, 126, 2)
			b.release(2, c, 127, 128)
			return b.history()
		}, want{verdict: Safe, service: ip(0), exclusion: ip(0), lockCheck: "Ok", resCheck: "Ok"}},

		{"long wait then grant during the lease: service, not client", func() *history.History {
			// Client 1 waited 900ms for the lock, so its acquire's call says little about its
			// lease: it began no earlier than client 3's release, and was still valid at 950ms.
			b := newHB("token", time.Second)
			e := b.acquire(3, 0, 1)
			a := b.acquire(1, 0, 905)
			b.release(3, e, 900, 901)
			b.read(1, a, 906, 907, 0)
			c := b.acquire(2, 850, 950) // 50ms into client 1's lease
			b.read(2, c, 951, 952, 0)
			b.write(2, c, 953, 954, 1)
			b.write(1, a, 955, 956, 1)
			return b.history()
		}, want{verdict: Unsafe, class: cp(ServiceClass), service: ip(1), lockCheck: "Illegal"}},

		{"stuck: holder crashed on a lock with no expiry", func() *history.History {
			b := newHB("setnx", 0)
			b.cs(2, 0)
			b.acquire(1, 10, 11)
			b.faultSpan("client-crash", 12, -1, "")
			b.op(history.OpAcquire, 2, 0, 20, history.TypeFail, 3000, nil, "acquire timeout")
			b.op(history.OpAcquire, 3, 0, 25, history.TypeFail, 8000, nil, "acquire timeout")
			b.op(history.OpAcquire, 2, 0, 3010, history.TypeFail, 10000, nil, "acquire timeout")
			return b.history()
		}, want{verdict: Stuck, lockCheck: "Ok", resCheck: "Ok", stuckStall: true}},

		{"stall inside a fault is not stuck", func() *history.History {
			b := newHB("token", time.Second)
			b.cs(1, 0)
			b.faultSpan("partition", 10, 9000, "")
			b.op(history.OpAcquire, 2, 0, 20, history.TypeFail, 9500, nil, "acquire timeout")
			b.cs(2, 9600) // in the danger window: the run has evidence
			return b.history()
		}, want{verdict: Safe}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := CheckHistory(tc.build(), Options{})
			r := o.Result
			w := tc.want
			for _, n := range []int{1, 4} {
				sameAsWhole(t, tc.build(), n) // checked in segments of 1 or 4 operations, or whole, it is the same
			}
			if r.Verdict != w.verdict {
				t.Errorf("verdict %q, want %q (first violation %+v)", r.Verdict, w.verdict, r.FirstViolation)
			}
			switch {
			case w.class == nil && r.ViolationClass != nil:
				t.Errorf("violation_class %q, want none", *r.ViolationClass)
			case w.class != nil && (r.ViolationClass == nil || *r.ViolationClass != *w.class):
				t.Errorf("violation_class %v, want %q (first violation %+v)", r.ViolationClass, *w.class, r.FirstViolation)
			}
			if w.classes != nil && !slices.Equal(r.ClassesSeen, w.classes) {
				t.Errorf("classes_seen %v, want %v", r.ClassesSeen, w.classes)
			}
			for _, c := range []struct {
				name string
				got  int
				want *int
			}{
				{"exclusion_violations", r.ExclusionViolations, w.exclusion},
				{"service_violations", r.ServiceViolations, w.service},
				{"lost_updates", r.LostUpdates, w.lost},
				{"stale_writes_rejected", r.StaleWritesRejected, w.stale},
			} {
				if c.want != nil && c.got != *c.want {
					t.Errorf("%s = %d, want %d", c.name, c.got, *c.want)
				}
			}
			if w.lockCheck != "" && r.LockCheck.Result != w.lockCheck {
				t.Errorf("lock_check %q, want %q", r.LockCheck.Result, w.lockCheck)
			}
			if w.resCheck != "" && r.ResourceCheck.Result != w.resCheck {
				t.Errorf("resource_check %q, want %q", r.ResourceCheck.Result, w.resCheck)
			}
			if (r.Verdict == Unsafe || r.Verdict == Stuck) != (r.FirstViolation != nil && r.TTDMs != nil) {
				t.Errorf("verdict %s with first_violation %v and ttd %v", r.Verdict, r.FirstViolation, r.TTDMs)
			}
			if r.Verdict == Safe && (r.TTDMs != nil || len(r.ClassesSeen) > 0) {
				t.Errorf("safe with ttd %v classes %v", r.TTDMs, r.ClassesSeen)
			}
			if w.stuckStall && r.LongestStallMs < 5000 {
				t.Errorf("longest_stall_ms %.1f, want ≥ 5000", r.LongestStallMs)
			}
			if o.Lock == nil || o.Resource == nil {
				t.Errorf("missing linearization info")
			}
		})
	}
}

func TestCheckCountsAndMeta(t *testing.T) {
	b := newHB("token", time.Second)
	b.h.Meta.Expected = "safe"
	for i := range 10 {
		b.cs(i%2+1, float64(i*100))
	}
	b.op(history.OpAcquire, 3, 0, 5, history.TypeFail, 50, nil, "acquire timeout")
	b.faultSpan("latency", 10, 20, "heal: proxy gone")
	r := CheckHistory(b.history(), Options{}).Result
	if r.Algorithm != "token" || r.Scenario != "test" || r.Backend != "local" || r.Seed != 1 {
		t.Errorf("meta not copied: %+v", r)
	}
	if r.Expected == nil || *r.Expected != "safe" || r.Matches == nil || !*r.Matches {
		t.Errorf("expected %v matches %v", r.Expected, r.Matches)
	}
	if r.Operations != 41 || r.AcquiresOk != 10 || r.AcquiresFailed != 1 {
		t.Errorf("operations %d acquires ok %d failed %d", r.Operations, r.AcquiresOk, r.AcquiresFailed)
	}
	if r.DurationMs != 907 {
		t.Errorf("duration_ms %v, want 907", r.DurationMs)
	}
	if r.AcquireLatencyMs.P50 != 1 || r.AcquireLatencyMs.Max != 1 {
		t.Errorf("latency %+v", r.AcquireLatencyMs)
	}
	if want := 10 / 0.907; r.ThroughputCSPerS < want-0.01 || r.ThroughputCSPerS > want+0.01 {
		t.Errorf("throughput %v, want %v", r.ThroughputCSPerS, want)
	}
	if len(r.FaultErrors) != 1 || !strings.Contains(r.FaultErrors[0], "proxy gone") {
		t.Errorf("fault_errors %v", r.FaultErrors)
	}
	if r.CheckerMs <= 0 {
		t.Errorf("checker_ms %v", r.CheckerMs)
	}
}

func TestMatches(t *testing.T) {
	unsafeBoth := &Result{Verdict: Unsafe, ClassesSeen: []Class{ClientClass, ServiceClass}}
	unsafeClient := &Result{Verdict: Unsafe, ClassesSeen: []Class{ClientClass}}
	for _, c := range []struct {
		r    *Result
		exp  string
		want bool
	}{
		{&Result{Verdict: Safe}, "safe", true},
		{&Result{Verdict: Safe}, "unsafe", false},
		{unsafeClient, "unsafe", true},
		{unsafeClient, "unsafe-client", true},
		{unsafeClient, "unsafe-service", false},
		{unsafeBoth, "unsafe-service", true},
		{&Result{Verdict: Stuck}, "stuck", true},
		{&Result{Verdict: Unknown}, "unknown", true},
		{&Result{Verdict: Unknown}, "safe", false},
	} {
		if got := Matches(c.r, c.exp); got != c.want {
			t.Errorf("Matches(%s %v, %q) = %v", c.r.Verdict, c.r.ClassesSeen, c.exp, got)
		}
	}
}

func TestTruncatedHistoryWarnings(t *testing.T) {
	b := newHB("token", time.Second)
	b.cs(1, 0)
	b.cs(2, 10)
	var buf bytes.Buffer
	buf.WriteString(`{"type":"meta","algorithm":"token","scenario":"s","backend":"local","seed":1,"clients":2,"ttl_ns":1000000000,"started":"","version":""}` + "\n")
	for _, e := range b.h.Events {
		buf.Write(history.AppendJSON(nil, e))
	}
	buf.WriteString(`{"type":"invoke","id":99,"op":"acq`) // killed mid-write
	h, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	r := CheckHistory(h, Options{}).Result
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "truncated") {
		t.Errorf("warnings %v", r.Warnings)
	}
	if r.Verdict != Safe {
		t.Errorf("verdict %s", r.Verdict)
	}
}

func TestTooFewOperationsUnknown(t *testing.T) {
	b := newHB("token", time.Second)
	b.op(history.OpAcquire, 1, 0, 0, history.TypeFail, 10, nil, "acquire timeout")
	r := CheckHistory(b.history(), Options{}).Result
	if r.Verdict != Unknown {
		t.Errorf("verdict %s, want unknown", r.Verdict)
	}
}
