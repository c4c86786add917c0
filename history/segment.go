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
	// Waiting are the invocation times of the acquires still waiting at Cut: the next segment's
	// carried operations.
	Waiting []int64
}

// ReadSegments reads a history and hands it to fn one segment at a time, in order, each of at
// least minOps operations (but the last), so the operations are never all in memory. fn owns each
// segment. It returns the history without its operations: meta, warnings, the run's end — or
// ErrUnsegmentable, possibly after some segments were handed over, when the history has fault
// lines, invocations out of time order across a cut, ids that do not increase from one
// invocation line to the next (as the recorder numbers them), or operations that refer to an
// acquire of an earlier segment. It fails and tolerates otherwise what Read does.
//
// A cut goes before an invocation at T when every operation so far returned before T, except
// acquires still waiting (never a read, write or release), and every acquisition granted so far
// had its release answered (ok or fail). Acquires of unknown outcome do not hold a cut up: one
// that anything later refers to makes the history unsegmentable.
func ReadSegments(r io.Reader, minOps int, fn func(*Segment) error) (*Run, error) {
	s := segmenter{minOps: max(minOps, 1), fn: fn, open: map[int64]int{}, carriedID: map[int64]bool{}, held: map[int64]bool{}}
	var meta Meta
	var warnings []string
	if err := scan(r, &meta, &warnings, s.add); err != nil {
		return nil, err
	}
	if s.err != nil {
		return nil, s.err
	}
	s.flush(Never)
	if s.err != nil {
		return nil, s.err
	}
	return &Run{Meta: meta, Warnings: warnings, End: s.end}, nil
}

type segmenter struct {
	minOps  int
	fn      func(*Segment) error
	err     error
	end     int64
	ops     []Operation   // the segment being read
	carried int           // ops[:carried] came from the previous segment
	start   int64         // the previous cut
	open    map[int64]int // operation id → index in ops, until its completion
	// carriedID are the ids of the carried operations: the only ones of an earlier segment that
	// later operations may refer to.
	carriedID map[int64]bool
	held      map[int64]bool
	// Over the segment's operations: the latest invocation and completion, and how many of the
	// open ones are not acquires.
	maxCall, maxDone int64
	openOther        int
	closedID         int64 // the largest id of an earlier segment
	maxID            int64
}

func (s *segmenter) add(e *Event) {
	if s.err != nil {
		return
	}
	s.end = max(s.end, e.AtNs)
	switch e.Type {
	case TypeInvoke:
		if len(s.ops)-s.carried >= s.minOps && s.openOther == 0 && len(s.held) == 0 &&
			s.maxCall < e.AtNs && s.maxDone < e.AtNs {
			s.flush(e.AtNs)
		}
		if e.AtNs < s.start || e.ID <= s.maxID || (e.Acq != 0 && e.Acq <= s.closedID && !s.carriedID[e.Acq]) {
			s.err = ErrUnsegmentable
			return
		}
		s.open[e.ID] = len(s.ops)
		s.ops = append(s.ops, Operation{
			ID: e.ID, Op: e.Op, Client: e.Client, Lock: e.Lock, Acq: e.Acq,
			Call: e.AtNs, Sent: e.AtNs, Return: Never, Done: Never, Status: TypeInfo, Fence: e.Fence, Value: e.Value,
		})
		s.maxCall, s.maxID = max(s.maxCall, e.AtNs), max(s.maxID, e.ID)
		if e.Op != OpAcquire {
			s.openOther++
		}
	case TypeOk, TypeFail, TypeInfo:
		j, ok := s.open[e.ID]
		if !ok {
			return // a completion without an invocation (or a second one) is ignored, as ReadRun does
		}
		delete(s.open, e.ID)
		o := &s.ops[j]
		if j < s.carried && e.AtNs < s.start {
			s.err = ErrUnsegmentable // a carried acquire answered before the cut it was carried over
			return
		}
		complete(o, e)
		s.maxDone = max(s.maxDone, e.AtNs)
		switch {
		case o.Op != OpAcquire:
			s.openOther--
			if o.Op == OpRelease && e.Type != TypeInfo {
				delete(s.held, o.Acq)
			}
		case e.Type == TypeOk:
			s.held[o.ID] = true
		}
	case TypeFault:
		s.err = ErrUnsegmentable
	}
}

// flush hands over the segment read so far, cut at cut; the acquires still open go on into the
// next one.
func (s *segmenter) flush(cut int64) {
	seg := &Segment{Carried: s.carried, Start: s.start, Cut: cut}
	var next []Operation
	if cut != Never {
		for _, o := range s.ops {
			if _, open := s.open[o.ID]; open {
				next = append(next, o)
			}
		}
		slices.SortStableFunc(next, func(x, y Operation) int { return compareCall(&x, &y) })
		seg.Ops = slices.DeleteFunc(s.ops, func(o Operation) bool { _, open := s.open[o.ID]; return open })
		for _, o := range next {
			seg.Waiting = append(seg.Waiting, o.Call)
		}
	} else {
		seg.Ops = s.ops
	}
	byCall := func(x, y Operation) int { return compareCall(&x, &y) }
	if !slices.IsSortedFunc(seg.Ops[seg.Carried:], byCall) {
		slices.SortStableFunc(seg.Ops[seg.Carried:], byCall)
	}
	if err := s.fn(seg); err != nil {
		s.err = err
		return
	}
	s.ops, s.carried, s.start = next, len(next), cut
	clear(s.open)
	clear(s.carriedID)
	for i := range s.ops {
		s.open[s.ops[i].ID] = i
		s.carriedID[s.ops[i].ID] = true
	}
	s.closedID = s.maxID
	s.maxCall, s.maxDone = 0, 0
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
