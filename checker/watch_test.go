package checker

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// slowReader hands its data out a few bytes at a time, as a history file that is still being
// written is read: Watch must assemble lines across reads and see every segment.
type slowReader struct {
	data []byte
	step int
}

func (s *slowReader) Read(b []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), s.step)], s.data)
	s.data = s.data[n:]
	return n, nil
}

// TestWatch: watching a history as it is written shows every operation, no violation in a correct
// lock's, and in one with a late write the overlap at the time CheckRun puts it.
func TestWatch(t *testing.T) {
	watch := func(t *testing.T, data []byte) Progress {
		t.Helper()
		var last Progress
		calls := 0
		if err := Watch(&slowReader{data: data, step: 97}, Options{}, 10, func(p Progress) { last = p; calls++ }); err != nil {
			t.Fatal(err)
		}
		if calls < 5 {
			t.Fatalf("%d segments seen, want several (segments of 10 operations)", calls)
		}
		return last
	}
	b := newHB("token", time.Second)
	for i := range 60 {
		b.cs(i%3+1, float64(i*10))
	}
	clean := b.history()
	p := watch(t, encode(t, clean))
	if p.Violations != 0 || p.FirstViolationMs != -1 || p.Ops != 240 || p.Unjudged != 0 {
		t.Errorf("correct lock: %+v, want 240 ops and no violation", p)
	}

	h := lateWriteRun(time.Second)
	res := CheckHistory(h, Options{}).Result
	want := res.FirstViolation
	if want == nil {
		t.Fatal("the late write's history has no violation")
	}
	p = watch(t, encode(t, h))
	if n := res.ExclusionViolations + res.ServiceViolations; p.Violations != n || p.FirstViolationMs != want.AtMs || n == 0 {
		t.Errorf("late write: %+v, want CheckRun's %d violations, the first at %.3f ms", p, n, want.AtMs)
	}
}

// TestWatchCountsFaults: the live count of faults fired counts each occurrence once, across
// segments, past the harness's own stalls (numbered from 2^40: a 10-minute soak's progress said
// "20 faults fired" for its last seven minutes after its first stall) and arming lines.
func TestWatchCountsFaults(t *testing.T) {
	b := newHB("token", time.Second)
	for i := range 60 {
		b.cs(i%3+1, float64(i*10))
		switch i {
		case 5, 50:
			b.faultSpan("client-pause", float64(i*10)+8, float64(i*10)+9, "")
		case 20: // a fault that spans segments
			b.faultSpan("partition", float64(i*10)+8, 420, "")
		case 25:
			b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1 << 40, Name: "harness-stall",
				Target: "harness", AtNs: at(float64(i*10) + 8), FaultMeaning: history.FaultMeaning{ActsOn: history.ActsOnHarness}})
			b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1 << 40, AtNs: at(float64(i*10) + 9)})
		case 30:
			b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: b.fault + 1, Name: "client-pause", Target: "client-1",
				AtNs: at(float64(i*10) + 8), FaultMeaning: history.FaultMeaning{Arm: true}})
		case 40:
			b.faultSpan("client-pause", float64(i*10)+8, float64(i*10)+9, "") // the armed fault fires
		}
	}
	var last Progress
	if err := Watch(&slowReader{data: encode(t, b.history()), step: 97}, Options{}, 10, func(p Progress) { last = p }); err != nil {
		t.Fatal(err)
	}
	if last.FaultsFired != 4 {
		t.Errorf("faults fired %d, want 4 (two pauses, a partition over several segments, an armed pause that fired; not the stall, not the arming)", last.FaultsFired)
	}
}

// wireHistory writes, as it is read, a correct lock's history of n serial critical sections,
// each with wire lines of long, distinct text as a parsed Redlock's commands and replies are: nothing holds
// the whole history.
type wireHistory struct {
	n, wire int
	cs      int
	b       *hb
	buf     []byte
}

func (w *wireHistory) Read(p []byte) (int, error) {
	for len(w.buf) == 0 {
		if w.b == nil {
			w.b = newHB("redlock", time.Second)
			meta, _ := json.Marshal(w.b.h.Meta)
			w.buf = append(meta, '\n')
			continue
		}
		if w.cs == w.n {
			return 0, io.EOF
		}
		t := float64(w.cs * 10)
		w.b.h.Events = w.b.h.Events[:0]
		w.b.cs(w.cs%3+1, t)
		w.cs++
		for i, e := range w.b.h.Events {
			w.buf = history.AppendJSON(w.buf, e)
			for k := range w.wire / len(w.b.h.Events) {
				dir := history.WireRequest // and its reply, which backs the grant
				if k%2 == 1 {
					dir = history.WireReply
				}
				w.buf = history.AppendJSON(w.buf, history.Event{Type: history.TypeWire, AtNs: e.AtNs, Client: e.Client, Node: fmt.Sprintf("redis-%d", k%5+1),
					Dir: dir, Cmd: "EVALSHA", Key: "lock", Detail: fmt.Sprintf("EVALSHA %0128d %d %d", w.cs, i, k)})
			}
		}
	}
	n := copy(p, w.buf)
	w.buf = w.buf[n:]
	return n, nil
}

// Watch holds one segment at a time, however long the history (issue 29: it kept every wire
// line of a soak, a gigabyte in ten minutes of Redlock): the live heap grows by less than 8 MB
// from the 20th segment to the 380th, where keeping the wire lines would add about 40 MB.
func TestWatchMemoryFlat(t *testing.T) {
	const sections, wire = 10_000, 16 // 40,000 operations, 160,000 wire lines of ~250 bytes
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var early, late uint64
	var last Progress
	err := Watch(&wireHistory{n: sections, wire: wire}, Options{}, 100, func(p Progress) {
		switch p.Segments {
		case 20:
			early = heap()
		case 380:
			late = heap()
		}
		last = p
	})
	if err != nil {
		t.Fatal(err)
	}
	if last.Ops != 4*sections || last.Violations != 0 || last.Segments < 390 || late == 0 {
		t.Fatalf("%+v: want %d operations in ~400 segments, no violation", last, 4*sections)
	}
	t.Logf("live heap after segment 20: %.1f MB, after 380: %.1f MB", float64(early)/1e6, float64(late)/1e6)
	if late > early+8<<20 {
		t.Errorf("the live heap grew from %.1f MB to %.1f MB over 360 segments: Watch keeps something of every segment",
			float64(early)/1e6, float64(late)/1e6)
	}
}

// TestWatchCountsWhatAnUnjudgedSegmentShows: a segment that cannot be judged from the state its
// cut left (here an acquire waiting at the cut is granted after the last holder's lease ended)
// still shows its own overlapping holders live, and says why it was left to the whole check. A
// soak's live check saw no violation where the whole check found several (CI, stop 35): every
// one was in such a segment.
func TestWatchCountsWhatAnUnjudgedSegmentShows(t *testing.T) {
	b := newHB("token", time.Second)
	for i := range 30 {
		b.cs(i%3+1, float64(i*10))
	}
	// Client 4 waits from 295 ms (before the cut at 300) until 1400, past the lease of the last
	// holder before the cut (290 + 1000).
	w := b.op(history.OpAcquire, 4, 0, 295, "", 0, nil, "")
	for i := range 40 {
		b.cs(i%3+1, float64(300+i*20))
	}
	b.add(history.Event{Type: history.TypeOk, ID: w, AtNs: at(1400)})
	b.release(4, w, 1406, 1407)
	lateWrite(b, 1500)
	for i := range 30 {
		b.cs(i%3+1, float64(1600+i*10))
	}
	h := b.history()
	slices.SortStableFunc(h.Events, func(x, y history.Event) int { return cmp.Compare(x.AtNs, y.AtNs) })
	res := CheckHistory(h, Options{}).Result
	if res.FirstViolation == nil || res.ExclusionViolations != 1 {
		t.Fatalf("the whole check: %s, %d exclusion violations, want the late write's", res.Verdict, res.ExclusionViolations)
	}
	var last Progress
	if err := Watch(&slowReader{data: encode(t, h), step: 97}, Options{}, 10, func(p Progress) { last = p }); err != nil {
		t.Fatal(err)
	}
	if last.Unjudged != 1 || !strings.Contains(last.UnjudgedWhy, "carried over the cut") {
		t.Errorf("unjudged %d (%q), want the segment of the late waiter, said why", last.Unjudged, last.UnjudgedWhy)
	}
	if last.Violations != 1 || last.FirstViolationMs != res.FirstViolation.AtMs {
		t.Errorf("live: %d violations, the first at %.3f ms; want the overlap the segment shows, at %.3f ms",
			last.Violations, last.FirstViolationMs, res.FirstViolation.AtMs)
	}
}
