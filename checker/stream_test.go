package checker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/histgen"
)

// encode writes h as a history file would hold it.
func encode(t *testing.T, h *history.History) []byte {
	t.Helper()
	data, err := histgen.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// comparable is a result without what depends on the clock (and on which operations a long
// check's porcupine page shows).
func comparable(r Result) Result {
	r.CheckerMs, r.LockCheck.Ms, r.ResourceCheck.Ms = 0, 0, 0
	r.LockCheck.Visualized, r.ResourceCheck.Visualized = "", ""
	return r
}

// knobs guards the package's test settings streamFrom and segmentOps.
var knobs sync.Mutex

// sameAsWhole checks h in segments of at least minOps operations and through CheckReader made to
// try segments, and fails the test unless both results are CheckRun's. It reports whether the
// segmented check decided on its own (rather than handing the history to the whole check).
func sameAsWhole(t *testing.T, h *history.History, minOps int) bool {
	t.Helper()
	return sameAsWholeData(t, encode(t, h), minOps)
}

// sameAsWholeData is sameAsWhole on a history file's bytes.
func sameAsWholeData(t *testing.T, data []byte, minOps int) bool {
	t.Helper()
	whole, err := history.ReadRun(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	want := comparable(CheckRun(whole, Options{}).Result)
	if want.LockCheck.Result == "Unknown" || want.ResourceCheck.Result == "Unknown" {
		// The whole check's search ran out of time: the segments' smaller searches may decide
		// (soundly) where it could not, so there is nothing to compare.
		t.Logf("the whole check timed out (lock %s, resource %s)", want.LockCheck.Result, want.ResourceCheck.Result)
		return false
	}
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
		if len(drawn.Ops) > len(whole.Ops) || drawn.End != whole.End {
			t.Fatalf("drawn run has %d operations, end %d (want %d)", len(drawn.Ops), drawn.End, whole.End)
		}
	}
	knobs.Lock() // streamFrom and segmentOps are the package's, shared by parallel subtests
	defer knobs.Unlock()
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
	// The histories are drawn in order from one seeded source, then checked in parallel.
	type tc struct {
		name   string
		h      *history.History
		minOps int
		count  *atomic.Int32
	}
	var segmented, injected, faulted atomic.Int32
	var cases []tc
	rng := rand.New(rand.NewPCG(5, 6))
	n := 60
	for i := range n {
		cfg := genConfig{Clients: 1 + rng.IntN(8), Ops: 200 + rng.IntN(4000), TTL: time.Duration(1+rng.IntN(5)) * time.Millisecond,
			Seed: rng.Uint64(), Noise: rng.IntN(2) == 0}
		if i%3 == 0 {
			cfg.TTL = time.Second
		}
		cases = append(cases, tc{fmt.Sprint(i), generate(cfg), []int{1, 16, 100, 1000}[i%4], &segmented})
	}
	for i := range 40 {
		kind := []inject{injectClient, injectService}[i%2]
		cfg := genConfig{Clients: 2 + rng.IntN(7), Ops: 200 + rng.IntN(3000), TTL: time.Duration(1+rng.IntN(5)) * time.Millisecond,
			Seed: rng.Uint64(), Inject: kind, Noise: rng.IntN(2) == 0}
		cfg.InjectAt = rng.IntN(cfg.Ops / 4)
		if i%4 < 2 {
			cfg.TTL = time.Second // short leases make most cuts uncertain: those go to the whole check
		}
		cases = append(cases, tc{fmt.Sprint("inject-", i), generate(cfg), []int{1, 16, 100}[i%3], &injected})
	}
	for i := range 20 {
		cfg := genConfig{Clients: 2 + rng.IntN(5), Ops: 400 + rng.IntN(3000), TTL: time.Second, Seed: rng.Uint64(), Noise: rng.IntN(2) == 0}
		if i%2 == 1 {
			cfg.Inject, cfg.InjectAt = injectClient, rng.IntN(cfg.Ops/4)
		}
		cases = append(cases, tc{fmt.Sprint("faults-", i), withFaults(generate(cfg), rng, i%5 == 4), []int{1, 16, 100}[i%3], &faulted})
	}
	t.Run("histories", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				if sameAsWhole(t, c.h, c.minOps) {
					c.count.Add(1)
				}
			})
		}
	})
	// Cuts with waiters need certain states, which most generated cuts have: if the segmented
	// check gave up on most histories, it would prove nothing.
	t.Logf("%d of %d histories checked in segments", segmented.Load(), n)
	if int(segmented.Load()) < n*2/3 {
		t.Fatalf("only %d of %d histories were checked in segments", segmented.Load(), n)
	}
	t.Logf("%d of 40 histories with a violation and %d of 20 with faults checked in segments", injected.Load(), faulted.Load())
	if faulted.Load() < 10 {
		t.Fatalf("only %d of 20 histories with faults were checked in segments", faulted.Load())
	}
	if injected.Load() < 15 {
		t.Fatalf("only %d of 40 histories with a violation were checked in segments", injected.Load())
	}
}

// A violation that straddles a point where a cut could go (every operation returned, nobody
// waiting) is never cut in two: the paused holder still holds its acquisition there, so no cut
// goes between its grant and its late write, and the result is CheckRun's.
func TestSegmentsNeverSplitAViolation(t *testing.T) {
	// Client 1 is granted at 301 and pauses; its lease ends at 311. Client 2 is granted at 320,
	// does its critical section and releases; a quiet moment follows; then client 1 writes late.
	h := lateWriteRun(10 * time.Millisecond)
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

// lateWriteRun is 30 critical sections, lateWrite at 300 ms, and 30 more.
func lateWriteRun(ttl time.Duration) *history.History {
	b := newHB("token", ttl)
	for i := range 30 {
		b.cs(i%3+1, float64(i*10))
	}
	lateWrite(b, 300)
	for i := range 30 {
		b.cs(i%3+1, float64(340+i*10))
	}
	return b.history()
}

// lateWrite records client 1 granted at t+1, pausing after its read; client 2 granted at t+20
// for a whole critical section; then client 1's late write at t+30 and its failed release.
func lateWrite(b *hb, t float64) {
	a := b.acquire(1, t, t+1)
	b.read(1, a, t+2, t+3, b.value)
	c := b.acquire(2, t+19, t+20)
	b.read(2, c, t+21, t+22, b.value)
	b.write(2, c, t+23, t+24, b.value+1)
	b.release(2, c, t+25, t+26)
	b.write(1, a, t+30, t+31, b.value+1)
	b.value++
	b.op(history.OpRelease, 1, a, t+32, history.TypeFail, t+33, nil, "not held")
}

// withFaults adds fault lines to h, in time order: a pause of a client over a tenth of the run
// from a third of it, a fault that could not be injected (or healed, when healFails: the cuts
// while it went on then make the segmented check give up), and one that never ends from four
// fifths.
func withFaults(h *history.History, rng *rand.Rand, healFails bool) *history.History {
	end := h.Events[len(h.Events)-1].AtNs
	at := func(f float64) int64 { return int64(f * float64(end)) }
	client := fmt.Sprintf("client-%d", 1+rng.IntN(max(h.Meta.Clients, 1)))
	faults := []history.Event{
		{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 1, Rule: 1, Name: "client-pause", Target: client, AtNs: at(0.33)},
		{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 1, AtNs: at(0.43)},
		{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 2, Rule: 2, Name: "partition", Target: "redis-1", AtNs: at(0.5), Error: "inject failed"},
		{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: 2, AtNs: at(0.55)},
		{Type: history.TypeFault, Phase: history.PhaseStart, Fault: 3, Rule: 3, Name: "kill", Target: "redis-2", AtNs: at(0.8)},
	}
	if healFails {
		faults[2].Error, faults[3].Error = "", "heal failed"
	}
	h.Meta.Faults = []history.PlannedFault{{Kind: "client-pause"}, {Kind: "partition"}, {Kind: "kill"}}
	var evs []history.Event
	for _, e := range h.Events {
		for len(faults) > 0 && faults[0].AtNs <= e.AtNs {
			evs, faults = append(evs, faults[0]), faults[1:]
		}
		evs = append(evs, e)
	}
	h.Events = append(evs, faults...)
	return h
}

// FuzzSegmentedSameAsWhole checks whatever history the decoder accepts in segments of one
// operation and whole: the results must be the same.
func FuzzSegmentedSameAsWhole(f *testing.F) {
	b := newHB("token", 100*time.Millisecond)
	for i := range 6 {
		b.cs(i%2+1, float64(i*10))
	}
	lateWrite(b, 60)
	b.faultSpan("client-pause", 64, 328, "")
	for i := range 6 {
		b.cs(i%2+1, float64(400+i*10))
	}
	f.Add(encode(&testing.T{}, b.history()), uint8(1))
	f.Add(encode(&testing.T{}, generate(genConfig{Clients: 3, Ops: 300, TTL: time.Second, Seed: 1, Noise: true, Inject: injectService, InjectAt: 30})), uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, minOps uint8) {
		h, err := history.Read(bytes.NewReader(data))
		if err != nil || len(h.Events) > 2000 {
			return // porcupine's search is exponential in the worst case; keep each input quick
		}
		sameAsWholeData(t, data, int(minOps%8)+1)
	})
}

// A release of unknown outcome (a timeout under a partition) no longer stops every later cut: once
// its acquire's lease has ended, the lock's state is certain whatever the release did, so a long
// chaos run is still checked in segments — with CheckRun's result. Without a TTL it stays
// uncertain: that run is checked whole.
func TestCutsAfterAnUnknownRelease(t *testing.T) {
	build := func(ttl time.Duration) *history.History {
		b := newHB("token", ttl)
		for i := range 20 {
			b.cs(i%3+1, float64(i*10))
		}
		a := b.acquire(1, 200, 201)
		b.read(1, a, 202, 203, b.value)
		b.write(1, a, 204, 205, b.value+1)
		b.value++
		b.op(history.OpRelease, 1, a, 206, history.TypeInfo, 300, nil, "timeout")
		// The next holder comes after client 1's lease ran out, and many more after it.
		for i := range 200 {
			b.cs(i%3+1, float64(1300+i*10))
		}
		return b.history()
	}
	cutsAfter := func(h *history.History) int {
		n := 0
		if _, err := history.ReadSegments(bytes.NewReader(encode(t, h)), 20, cuttable(Options{}), func(s *history.Segment) error {
			if s.Cut != history.Never && s.Cut > at(300) {
				n++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	h := build(time.Second)
	if n := cutsAfter(h); n < 10 {
		t.Errorf("%d cuts after the unknown release, want many once its lease ended", n)
	}
	if !sameAsWhole(t, h, 20) {
		t.Error("the history with an unknown release was not checked in segments")
	}
	if n := cutsAfter(build(0)); n != 0 {
		t.Errorf("without a TTL: %d cuts after the unknown release, want none (the lock's state is uncertain)", n)
	}
}

// A cause the wire lines name is named the same in segments: each segment has the wire lines of
// its stretch of the run (a late DEL that removed the holder's key, here).
func TestSegmentsNameWireCauses(t *testing.T) {
	b := newHB("redlock", 30*time.Millisecond)
	for i := range 30 {
		b.cs(i%3+1, float64(i*10))
	}
	// Client 3's lease ends at 331; client 1 is granted at 336; client 3's late release's DEL
	// reaches the server at 345 and removes client 1's key; client 2 is granted at 351.
	c := b.acquire(3, 300, 301)
	a := b.acquire(1, 335, 336)
	b.op(history.OpRelease, 3, c, 340, history.TypeOk, 346, nil, "")
	b.add(history.Event{Type: history.TypeWire, AtNs: at(345), Client: 3, Node: "redis-1", Dir: history.WireRequest, Cmd: "DEL", Key: "lock", Detail: "DEL lock"})
	b.add(history.Event{Type: history.TypeWire, AtNs: at(345.5), Client: 3, Node: "redis-1", Dir: history.WireReply, Cmd: "DEL", Key: "lock", Detail: ":1"})
	d := b.acquire(2, 350, 351)
	b.release(1, a, 360, 361)
	b.release(2, d, 362, 363)
	for i := range 30 {
		b.cs(i%3+1, float64(400+i*10))
	}
	h := b.history()
	r := CheckHistory(h, Options{}).Result
	if r.FirstViolation == nil || !strings.Contains(r.FirstViolation.Cause, "DEL lock reached redis-1") {
		t.Fatalf("the whole check's first violation %+v does not name the DEL on the wire", r.FirstViolation)
	}
	if !sameAsWhole(t, h, 4) {
		t.Fatal("the history was not checked in segments")
	}
}

// Every violation the segmented check keeps names the faults whose danger window it fell in, as
// the whole check's do: the lost update of a paused holder's late write too (a 10-minute
// ZooKeeper soak grouped it under "no fault": the segments blamed their grants and overlaps, not
// the lost update and the fence regression they keep apart).
func TestSegmentsBlameEveryViolation(t *testing.T) {
	b := newHB("token", 10*time.Millisecond)
	for i := range 30 {
		b.cs(i%3+1, float64(i*10))
	}
	b.faultSpan("client-pause", 302, 329, "")
	lateWrite(b, 300)
	for i := range 30 {
		b.cs(i%3+1, float64(340+i*10))
	}
	h := b.history()
	h.Meta.Faults = []history.PlannedFault{{Kind: "client-pause"}}
	_, out, err := checkSegments(bytes.NewReader(encode(t, h)), Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for how, o := range map[string]*Outcome{"segments": out, "whole": CheckHistory(h, Options{})} {
		kinds := map[string]bool{}
		for _, v := range o.Analysis.Violations {
			kinds[v.Kind] = true
			if !slices.Contains(v.Faults, 1) {
				t.Errorf("%s: %s violation at %.1fms blames faults %v, want the client-pause (1)", how, v.Kind, v.AtMs, v.Faults)
			}
		}
		if !kinds["lost-update"] || !kinds["exclusion"] {
			t.Errorf("%s: violations of kinds %v, want an exclusion and a lost update", how, kinds)
		}
	}
}
