package history

import (
	"errors"
	"io"
	"slices"
)

// ErrUnsegmentable is returned by ReadSegments for a history it cannot cut into segments that
// mean the same as the whole: read it whole with ReadRun instead.
var ErrUnsegmentable = errors.New("history: cannot be read in segments")

// Segment is a stretch of a history's operations, cut where no acquisition was held: every
// operation invoked before the cut had completed by then, but for acquires still waiting for the
// lock, which are carried over to the next segment.
type Segment struct {
	// Ops are the segment's operations in invocation order, all completed (but in the last
	// segment); the first Carried of them are the waiting acquires carried over from the previous
	// segment, invoked before Start.
	Ops     []Operation
	Carried int
	// Start and Cut bound the invocations of the segment's own operations: [Start, Cut). Cut is
	// Never for the last segment.
	Start, Cut int64
	// Waiting are the acquires still waiting at Cut, as they were then: the next segment's
	// carried operations.
	Waiting []Operation
	// Meta is the history's meta line; End the latest time of any line read so far, which for
	// the last segment is the run's end; Faults the fault spans that started before Cut, as far
	// as they are known then (a fault still going on has End == Never).
	Meta   Meta
	End    int64
	Faults []FaultSpan
	// Wire are the requests a client sent while one of its releases was under way (invoked, and
	// not completed before the request's time), read after the previous cut and before this one,
	// in file order: the late release a cause names is among them. They are all of the wire a
	// segment carries — a parsed run writes several wire lines per operation, and a segment that
	// could not be cut for minutes held them all (issue 29: most of a soak's memory).
	Wire []WireLine
}

// ReadSegments reads a history and hands it to fn one segment at a time, in order, each of at
// least minOps operations (but the last), so the operations are never all in memory. fn owns each
// segment. It returns the history without its operations and wire lines (each segment holds its
// own: a parsed run writes many a line per operation): meta, warnings, faults, the run's end —
// or ErrUnsegmentable, possibly after some segments were handed over, when the history has
// invocations or fault lines out of time order across a cut, an id invoked twice or beyond the
// 64 M the dense index takes, or operations that refer to an operation of an earlier segment. It
// fails and tolerates otherwise what Read does.
//
// A cut goes before an invocation at T when every operation so far returned before T, except
// acquires still waiting (never a read, write or release), and every acquisition granted so far
// had its release answered (ok, fail or unknown). Acquires of unknown outcome do not hold a cut up: one
// that anything later refers to makes the history unsegmentable.
//
// cut, if not nil, has the last word on each cut that rule allows at t: ops are the segment's
// operations so far, those still open (the waiting acquires) with Done == Never. A cut it refuses
// is tried again when the segment has grown by an eighth.
func ReadSegments(r io.Reader, minOps int, cut func(meta *Meta, ops []Operation, t int64) bool, fn func(*Segment) error) (*Run, error) {
	var meta Meta
	s := segmenter{meta: &meta, minOps: max(minOps, 1), next: max(minOps, 1), cut: cut, fn: fn, faultIdx: map[int64]int{},
		relOpen: map[int]int{}, relDone: map[int]int64{}}
	var warnings []string
	if err := scan(r, &meta, &warnings, s.add); err != nil {
		return nil, err
	}
	if err := s.flush(Never); err != nil {
		return nil, err
	}
	return &Run{Meta: meta, Warnings: warnings, End: s.end, Faults: s.faults.Faults, Unfired: s.faults.Unfired, Abort: s.faults.Abort, Stop: s.faults.Stop, StopVerdict: s.faults.StopVerdict}, nil
}

type segmenter struct {
	meta    *Meta
	cut     func(*Meta, []Operation, int64) bool
	next    int // the size of the segment at which a cut is tried next
	minOps  int
	fn      func(*Segment) error
	end     int64
	ops     []Operation // the segment being read
	carried int         // ops[:carried] came from the previous segment
	start   int64       // the previous cut
	open    idSet       // operation id → index in ops, until its completion
	// The ids invoked so far, and those of the operations of earlier segments (not carried).
	seen, closed bitset
	held         idSet // acquisitions granted and not released
	// The fault spans, unfired faults and abort so far, and the index of the spans by fault id.
	faults   Run
	faultIdx map[int64]int
	// The segment's wire lines (Segment.Wire), handed over with it: kept for the whole run,
	// they were most of a long parsed soak's memory (issue 29). A request is kept when its
	// client has a release open, or completed at or after the request's time.
	wire    []WireLine
	relOpen map[int]int   // client → its releases invoked and not completed
	relDone map[int]int64 // client → the latest completion of its releases
	backs   backing       // what the wire showed of each acquisition under way

	// Over the segment's operations: the latest invocation and completion, and how many of the
	// open ones are not acquires.
	maxCall, maxDone int64
	openOther        int
	openCarried      int // carried operations not completed yet: a cut waits for them
}

func (s *segmenter) add(e *Event) error {
	s.end = max(s.end, e.AtNs)
	s.backs.see(e)
	switch e.Type {
	case TypeInvoke:
		if len(s.ops)-s.carried >= s.next && s.openOther == 0 && s.held.len() == 0 &&
			s.maxCall < e.AtNs && s.maxDone < e.AtNs && s.openCarried == 0 && s.allowed(e.AtNs) {
			if err := s.flush(e.AtNs); err != nil {
				return err
			}
		}
		if e.AtNs < s.start || e.ID >= maxDense || s.seen.has(e.ID) || s.closed.has(e.Acq) {
			return ErrUnsegmentable
		}
		s.seen.set(e.ID)
		s.open.put(e.ID, len(s.ops))
		s.ops = append(s.ops, Operation{
			ID: e.ID, Op: e.Op, Client: e.Client, Lock: e.Lock, Acq: e.Acq,
			Call: e.AtNs, Sent: e.AtNs, Return: Never, Done: Never, Status: TypeInfo, Fence: e.Fence, Value: e.Value,
		})
		s.maxCall = max(s.maxCall, e.AtNs)
		if e.Op != OpAcquire {
			s.openOther++
		}
		if e.Op == OpRelease {
			s.relOpen[e.Client]++
		}
	case TypeOk, TypeFail, TypeInfo:
		j, ok := s.open.get(e.ID)
		if !ok {
			return nil // a completion without an invocation (or a second one) is ignored, as ReadRun does
		}
		s.open.del(e.ID)
		o := &s.ops[j]
		if j < s.carried {
			if e.AtNs < s.start {
				return ErrUnsegmentable // a carried acquire answered before the cut it was carried over
			}
			s.openCarried--
		}
		complete(o, e)
		s.backs.complete(o, e)
		s.maxDone = max(s.maxDone, e.AtNs)
		switch {
		case o.Op != OpAcquire:
			s.openOther--
			if o.Op == OpRelease {
				// Answered, whatever the outcome: nothing is done under an acquisition once
				// its release was invoked, and when an unknown release took effect is the
				// lock's state, which cut decides on.
				s.held.del(o.Acq)
				s.relOpen[o.Client]--
				s.relDone[o.Client] = max(s.relDone[o.Client], e.AtNs)
			}
		case e.Type == TypeOk:
			s.held.put(o.ID, 0)
		}
	case TypeFault:
		if e.Phase != PhaseUnfired && e.AtNs < s.start {
			return ErrUnsegmentable // an earlier segment was judged without it
		}
		addFault(&s.faults, s.faultIdx, e)
	case TypeAbort:
		addAbort(&s.faults, e)
	case TypeStop:
		addStop(&s.faults, e)
	case TypeWire:
		if e.Dir != WireReply && (s.relOpen[e.Client] > 0 || e.AtNs <= s.relDone[e.Client]) {
			s.wire = append(s.wire, wireLine(e))
		}
	}
	return nil
}

// allowed asks cut about a cut at t, and sets when to ask next.
func (s *segmenter) allowed(t int64) bool {
	if s.cut == nil || s.cut(s.meta, s.ops, t) {
		return true
	}
	s.next = len(s.ops) - s.carried + (len(s.ops)-s.carried)/8 + 1
	return false
}

// flush hands over the segment read so far, cut at cut; the acquires still open go on into the
// next one.
func (s *segmenter) flush(cut int64) error {
	seg := &Segment{Carried: s.carried, Start: s.start, Cut: cut, Meta: *s.meta, End: s.end, Faults: slices.Clone(s.faults.Faults), Wire: s.wire}
	wires := len(s.wire) // read now: once handed over, the segment is fn's
	s.wire = nil
	var next []Operation
	if cut != Never {
		for _, o := range s.ops {
			if _, open := s.open.get(o.ID); open {
				next = append(next, o)
			}
		}
		slices.SortStableFunc(next, func(x, y Operation) int { return compareCall(&x, &y) })
		seg.Ops = slices.DeleteFunc(s.ops, func(o Operation) bool { _, open := s.open.get(o.ID); return open })
		seg.Waiting = slices.Clone(next)
	} else {
		seg.Ops = s.ops
	}
	for i := range seg.Ops {
		s.closed.set(seg.Ops[i].ID)
	}
	byCall := func(x, y Operation) int { return compareCall(&x, &y) }
	if !slices.IsSortedFunc(seg.Ops[seg.Carried:], byCall) {
		slices.SortStableFunc(seg.Ops[seg.Carried:], byCall)
	}
	if err := s.fn(seg); err != nil {
		return err
	}
	// The next segment's buffer is sized for it: growing it by appends copies it over and over.
	s.ops = append(make([]Operation, 0, s.minOps+s.minOps/4+len(next)), next...)
	if wires > 0 {
		s.wire = make([]WireLine, 0, wires+wires/4) // as many as the last one had, give or take
	}
	s.carried, s.openCarried, s.start, s.next = len(next), len(next), cut, s.minOps
	s.open = idSet{}
	for i := range s.ops {
		s.open.put(s.ops[i].ID, i)
	}
	s.maxCall, s.maxDone = 0, 0
	return nil
}

func compareCall(x, y *Operation) int {
	switch {
	case x.Call < y.Call:
		return -1
	case x.Call > y.Call:
		return 1
	}
	return 0
}
