package checker

import (
	"io"
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
