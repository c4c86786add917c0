package checker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// encode writes h as a history file would hold it.
func encode(t *testing.T, h *history.History) []byte {
	t.Helper()
	buf, err := json.Marshal(h.Meta)
	if err != nil {
		t.Fatal(err)
	}
	buf = append(buf, '\n')
	for _, e := range h.Events {
		buf = history.AppendJSON(buf, e)
	}
	return buf
}

// comparable is a result without what depends on the clock (and on which operations a long
// check's porcupine page shows).
func comparable(r Result) Result {
	r.CheckerMs, r.LockCheck.Ms, r.ResourceCheck.Ms = 0, 0, 0
	r.LockCheck.Visualized, r.ResourceCheck.Visualized = "", ""
	return r
}

// sameAsWhole checks h in segments of at least minOps operations and through CheckReader made to
// try segments, and fails the test unless both results are CheckRun's. It reports whether the
// segmented check decided on its own (rather than handing the history to the whole check).
func sameAsWhole(t *testing.T, h *history.History, minOps int) bool {
	t.Helper()
	data := encode(t, h)
	whole, err := history.ReadRun(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	want := comparable(CheckRun(whole, Options{}).Result)
	diff := func(how string, got Result) {
		t.Helper()
		if got = comparable(got); !reflect.DeepEqual(got, want) {
			g, _ := json.MarshalIndent(got, "", " ")
			w, _ := json.MarshalIndent(want, "", " ")
			t.Fatalf("%s: result differs from CheckRun's\ngot:  %s\nwant: %s", how, g, w)
		}
	}
	drawn, out, err := checkSegments(bytes.NewReader(data), Options{}, minOps)
	segmented := err == nil && len(drawn.Ops) < len(whole.Ops) // more than one segment
	switch {
	case errors.Is(err, errUnclean), errors.Is(err, history.ErrUnsegmentable):
	case err != nil:
		t.Fatal(err)
	default:
		diff(fmt.Sprintf("segments of %d", minOps), out.Result)
		if len(drawn.Ops) == 0 || drawn.End != whole.End {
			t.Fatalf("drawn run has %d operations, end %d (want %d)", len(drawn.Ops), drawn.End, whole.End)
		}
	}
	defer func(from int64, ops int) { streamFrom, segmentOps = from, ops }(streamFrom, segmentOps)
	streamFrom, segmentOps = 0, minOps
	_, out, err = CheckReader(bytes.NewReader(data), int64(len(data)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	diff("CheckReader", out.Result)
	return segmented
}

// The segmented check decides exactly as CheckRun on generated histories of a correct lock and on
// ones with an injected violation of each class, cut into segments of many sizes (or hands them to
// the whole check, with the same result).
func TestSegmentedSameAsWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	segmented := 0
	n := 60
	for i := range n {
		cfg := genConfig{Clients: 1 + rng.IntN(8), Ops: 200 + rng.IntN(4000), TTL: time.Duration(1+rng.IntN(5)) * time.Millisecond,
			Seed: rng.Uint64(), Noise: rng.IntN(2) == 0}
		if i%3 == 0 {
			cfg.TTL = time.Second
		}
		minOps := []int{1, 16, 100, 1000}[i%4]
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if sameAsWhole(t, generate(cfg), minOps) {
				segmented++
			}
		})
	}
	// Cuts with waiters need certain states, which most generated cuts have: if the segmented
	// check gave up on most histories, it would prove nothing.
	t.Logf("%d of %d histories checked in segments", segmented, n)
	if segmented < n*2/3 {
		t.Fatalf("only %d of %d histories were checked in segments", segmented, n)
	}
	injected := 0
	for i := range 40 {
		kind := []inject{injectClient, injectService}[i%2]
		cfg := genConfig{Clients: 2 + rng.IntN(7), Ops: 200 + rng.IntN(3000), TTL: time.Duration(1+rng.IntN(5)) * time.Millisecond,
			Seed: rng.Uint64(), Inject: kind, Noise: rng.IntN(2) == 0}
		cfg.InjectAt = rng.IntN(cfg.Ops / 4)
		if i%4 < 2 {
			cfg.TTL = time.Second // short leases make most cuts uncertain: those go to the whole check
		}
		t.Run(fmt.Sprint("inject-", i), func(t *testing.T) {
			if sameAsWhole(t, generate(cfg), []int{1, 16, 100}[i%3]) {
				injected++
			}
		})
	}
	t.Logf("%d of 40 histories with a violation checked in segments", injected)
	if injected < 15 {
		t.Fatalf("only %d of 40 histories with a violation were checked in segments", injected)
	}
}

// A violation that straddles a point where a cut could go (every operation returned, nobody
// waiting) is never cut in two: the paused holder still holds its acquisition there, so no cut
// goes between its grant and its late write, and the result is CheckRun's.
func TestSegmentsNeverSplitAViolation(t *testing.T) {
	b := newHB("token", 10*time.Millisecond)
	for i := range 30 {
		b.cs(i%3+1, float64(i*10))
	}
	// Client 1 is granted at 301 and pauses; its lease ends at 311. Client 2 is granted at 320,
	// does its critical section and releases; a quiet moment follows; then client 1 writes late.
	a := b.acquire(1, 300, 301)
	b.read(1, a, 302, 303, b.value)
	c := b.acquire(2, 319, 320)
	b.read(2, c, 321, 322, b.value)
	b.write(2, c, 323, 324, b.value+1)
	b.release(2, c, 325, 326)
	b.write(1, a, 330, 331, b.value+1)
	b.value++
	b.op(history.OpRelease, 1, a, 332, history.TypeFail, 333, nil, "not held")
	for i := range 30 {
		b.cs(i%3+1, float64(340+i*10))
	}
	h := b.history()
	data := encode(t, h)
	var cuts []int64
	_, err := history.ReadSegments(bytes.NewReader(data), 1, nil, func(s *history.Segment) error {
		cuts = append(cuts, s.Cut)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range cuts {
		if cut > at(301) && cut <= at(330) {
			t.Errorf("cut at %.3fms, inside client 1's acquisition (301ms to its late write at 330ms)", ms(cut))
		}
	}
	if len(cuts) < 20 {
		t.Errorf("only %d cuts: the test needs cuts before and after the violation", len(cuts))
	}
	sameAsWhole(t, h, 1)
	if r := CheckHistory(h, Options{}).Result; r.Verdict != Unsafe || r.ExclusionViolations != 1 {
		t.Fatalf("verdict %s with %d exclusion violations, want unsafe with 1", r.Verdict, r.ExclusionViolations)
	}
}
