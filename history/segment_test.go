package history_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/histgen"
)

// Segments hold every operation of the history once, as ReadRun pairs it, cut as documented.
func TestReadSegmentsCoverEveryOperation(t *testing.T) {
	data, err := histgen.Encode(histgen.Generate(histgen.Config{Clients: 5, Ops: 20000, TTL: time.Second, Seed: 4, Noise: true}))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := history.ReadRun(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]history.Operation{}
	var segs []*history.Segment
	run, err := history.ReadSegments(bytes.NewReader(data), 100, nil, func(s *history.Segment) error {
		segs = append(segs, s)
		for _, o := range s.Ops {
			if _, dup := got[o.ID]; dup {
				t.Fatalf("operation %d in two segments", o.ID)
			}
			got[o.ID] = o
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 20 || run.End != whole.End || !reflect.DeepEqual(run.Meta, whole.Meta) {
		t.Fatalf("%d segments, end %d (want %d)", len(segs), run.End, whole.End)
	}
	for _, o := range whole.Ops {
		if g, ok := got[o.ID]; !ok || !reflect.DeepEqual(g, o) {
			t.Fatalf("operation %d: %+v in the segments, %+v in ReadRun's", o.ID, g, o)
		}
	}
	if len(got) != len(whole.Ops) {
		t.Fatalf("%d operations in the segments, %d in ReadRun's", len(got), len(whole.Ops))
	}
	for k, s := range segs {
		for i, o := range s.Ops {
			switch {
			case i < s.Carried && (o.Op != history.OpAcquire || o.Call >= s.Start):
				t.Fatalf("segment %d: carried %+v", k, o)
			case i >= s.Carried && (o.Call < s.Start || o.Call >= s.Cut):
				t.Fatalf("segment %d [%d, %d): operation invoked at %d", k, s.Start, s.Cut, o.Call)
			case s.Cut != history.Never && (o.Done == history.Never || o.Done >= s.Cut):
				t.Fatalf("segment %d: operation %d not done before the cut", k, o.ID)
			}
		}
		if k+1 < len(segs) {
			next := segs[k+1]
			if len(s.Waiting) != next.Carried {
				t.Fatalf("segment %d: %d waiting, the next carries %d", k, len(s.Waiting), next.Carried)
			}
			for i, w := range s.Waiting {
				if next.Ops[i].ID != w.ID {
					t.Fatalf("segment %d: waiting %d, the next carries %d", k, w.ID, next.Ops[i].ID)
				}
			}
		}
	}
}

// What segments cannot mean the same as the whole is refused, for the caller to read it whole.
// (Fault lines in time order are not: each segment has the faults that started before its cut.)
func TestReadSegmentsUnsegmentable(t *testing.T) {
	meta := `{"type":"meta","algorithm":"a","scenario":"s","backend":"local","seed":1,"clients":2,"ttl_ns":1000,"started":"","version":""}` + "\n"
	cs := func(id, acq, t int) string { // a critical section of one acquire and its release
		a := `{"type":"invoke","id":%d,"op":"acquire","client":1,"lock":"lock","at_ns":%d}
{"type":"ok","id":%d,"at_ns":%d}
{"type":"invoke","id":%d,"op":"release","client":1,"acq":%d,"at_ns":%d}
{"type":"ok","id":%d,"at_ns":%d}
`
		return fmt.Sprintf(a, id, t, id, t+1, id+1, acq, t+2, id+1, t+3)
	}
	for name, body := range map[string]string{
		"fault line before the cut": cs(1, 1, 10) + cs(3, 3, 20) + `{"type":"fault","phase":"start","fault":1,"name":"pause","at_ns":15}` + "\n",
		"id invoked twice":          cs(1, 1, 10) + cs(1, 1, 20),
		"invocation before the cut": cs(1, 1, 10) + cs(3, 3, 20) + cs(5, 5, 5),
		"refers to an earlier one":  cs(1, 1, 10) + cs(3, 1, 20),
	} {
		_, err := history.ReadSegments(strings.NewReader(meta+body), 1, nil, func(*history.Segment) error { return nil })
		if !errors.Is(err, history.ErrUnsegmentable) {
			t.Errorf("%s: err %v, want ErrUnsegmentable", name, err)
		}
	}
}

// An abort line (the run ended early, and why) reaches the run whichever way it is read; a
// history without one, as every history before it, reads as a run that ran its course.
func TestAbortLine(t *testing.T) {
	data, err := histgen.Encode(histgen.Generate(histgen.Config{Clients: 3, Ops: 2000, TTL: time.Second, Seed: 2}))
	if err != nil {
		t.Fatal(err)
	}
	const why = "client 2 broke the protocol: answered id 42"
	aborted := history.AppendJSON(bytes.Clone(data), history.Event{Type: history.TypeAbort, AtNs: 1, Error: why})
	for _, c := range []struct {
		data []byte
		want string
	}{{data, ""}, {aborted, why}} {
		h, err := history.Read(bytes.NewReader(c.data))
		if err != nil {
			t.Fatal(err)
		}
		run, err := history.ReadRun(bytes.NewReader(c.data), 0)
		if err != nil {
			t.Fatal(err)
		}
		segs, err := history.ReadSegments(bytes.NewReader(c.data), 100, nil, func(*history.Segment) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if h.Run().Abort != c.want || run.Abort != c.want || segs.Abort != c.want {
			t.Errorf("abort: Read %q, ReadRun %q, ReadSegments %q; want %q", h.Run().Abort, run.Abort, segs.Abort, c.want)
		}
	}
}

// Each segment holds the requests sent under a release since the previous cut, each line in one
// segment, and nothing keeps the others: a parsed run writes many a wire line per operation, and a
// soak's live check holding them all grew by a gigabyte in ten minutes (issue 29); a segment that
// could not be cut for minutes then held all of its stretch's.
func TestReadSegmentsHandOverWire(t *testing.T) {
	h := histgen.Generate(histgen.Config{Clients: 5, Ops: 5000, TTL: time.Second, Seed: 7, Noise: true})
	var events []history.Event
	for i, e := range h.Events {
		dir := history.WireRequest
		if i%3 == 2 {
			dir = history.WireReply
		}
		events = append(events, e, history.Event{Type: history.TypeWire, AtNs: e.AtNs, Client: 1 + i%5, Node: "redis-1",
			Dir: dir, Cmd: "PING", Detail: fmt.Sprintf("PING %d", i)})
	}
	h.Events = events
	data, err := histgen.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := history.ReadRun(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var got []history.WireLine
	segs := 0
	run, err := history.ReadSegments(bytes.NewReader(data), 100, nil, func(s *history.Segment) error {
		segs++
		for _, w := range s.Wire {
			if w.At < s.Start || (s.Cut != history.Never && w.At > s.Cut) {
				t.Fatalf("segment %d [%d, %d]: wire line at %d", segs, s.Start, s.Cut, w.At)
			}
		}
		got = append(got, s.Wire...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if segs < 20 || len(whole.Wire) != len(h.Events)/2 {
		t.Fatalf("%d segments, %d wire lines read whole (want %d)", segs, len(whole.Wire), len(h.Events)/2)
	}
	// The requests sent while a release of their client was under way, in ReadRun's order.
	var want []history.WireLine
	for _, w := range whole.Wire {
		if !w.Reply && slices.ContainsFunc(whole.Ops, func(o history.Operation) bool {
			return o.Op == history.OpRelease && o.Client == w.Client && o.Call <= w.At && w.At <= o.Done
		}) {
			want = append(want, w)
		}
	}
	if len(want) == 0 || len(want) > len(whole.Wire)/2 {
		t.Fatalf("%d of %d wire lines under a release: the test shows nothing", len(want), len(whole.Wire))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the segments hold %d wire lines, not the %d requests under a release of ReadRun's %d, in its order", len(got), len(want), len(whole.Wire))
	}
	if len(run.Wire) != 0 {
		t.Fatalf("ReadSegments returned %d wire lines: they are the segments'", len(run.Wire))
	}
}
