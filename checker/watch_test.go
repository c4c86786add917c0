package checker

import (
	"io"
	"testing"
	"time"
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
