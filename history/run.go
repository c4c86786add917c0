package history

import (
	"cmp"
	"math"
	"slices"
)

// Run is a history as the checks and the reports use it: its operations (invocations paired with
// completions, in invocation order), its fault spans and unfired faults, and the time of its last
// line. ReadRunFile builds it straight from a file without keeping the lines, which is what lets
// a long run be checked in a fraction of the memory its events would take.
type Run struct {
	Meta     Meta
	Ops      []Operation
	Faults   []FaultSpan
	Unfired  []UnfiredFault
	End      int64 // the largest at_ns of any line: the run's duration
	Warnings []string
	// Abort is why the run ended before its time, from its abort line ("" when it ran its
	// course; the first, should there be more).
	Abort string
	// Stop is why the run ended early once decided, from its stop line ("" when it ran its full
	// time); StopVerdict the verdict it was decided with ("unsafe", "safe" or "stuck").
	Stop, StopVerdict string
	// Wire holds the wire lines, in time order: the lock's commands and replies on its parsed
	// links (none when no fault acted on the wire).
	Wire []WireLine
}

// WireLine is one command or reply that crossed a parsed link (a TypeWire line).
type WireLine struct {
	At     int64
	Client int
	Node   string
	Reply  bool
	Cmd    string
	Key    string
	Text   string
	// Refused: a reply that did not do what its request asked (Event.Refused).
	Refused bool
}

// wireLine is the wire line e records.
func wireLine(e *Event) WireLine {
	return WireLine{At: e.AtNs, Client: e.Client, Node: e.Node, Reply: e.Dir == WireReply, Cmd: e.Cmd, Key: e.Key, Text: e.Detail, Refused: e.Refused}
}

// Run pairs h's events (see Operations, Faults and Unfired).
func (h *History) Run() *Run {
	var b runBuilder
	b.init(len(h.Events) / 2)
	for i := range h.Events {
		b.add(&h.Events[i])
	}
	r := b.done()
	r.Meta, r.Warnings = h.Meta, h.Warnings
	return r
}

// runBuilder pairs events as they come: only the operations still open are indexed.
type runBuilder struct {
	run Run
	// Operation id → index in run.Ops + 1, until its completion. Recorders number operations
	// densely from 1, so a slice indexed by id serves them; other ids go to the map.
	dense  []int32
	open   map[int64]int
	faults map[int64]int // fault id → index in run.Faults
	backs  backing
}

// maxDense bounds the ids the dense index takes (64 M operations, 256 MB of index at most).
const maxDense = 1 << 26

func (b *runBuilder) init(hint int) {
	b.run.Ops = make([]Operation, 0, hint)
	b.open = map[int64]int{}
	b.faults = map[int64]int{}
}

func (b *runBuilder) index(id int64, i int) {
	if id > 0 && id < maxDense && i < math.MaxInt32 {
		for int64(len(b.dense)) <= id {
			b.dense = append(b.dense, make([]int32, max(len(b.dense), 1024))...)
		}
		b.dense[id] = int32(i + 1) // a second invocation with the same id takes its place, as in a map
		return
	}
	b.open[id] = i
}

// take returns and forgets the index of open operation id.
func (b *runBuilder) take(id int64) (int, bool) {
	if id > 0 && id < int64(len(b.dense)) && b.dense[id] != 0 {
		i := int(b.dense[id] - 1)
		b.dense[id] = 0
		return i, true
	}
	i, ok := b.open[id]
	if ok {
		delete(b.open, id)
	}
	return i, ok
}

func (b *runBuilder) add(e *Event) {
	b.run.End = max(b.run.End, e.AtNs)
	b.backs.see(e)
	switch e.Type {
	case TypeInvoke:
		b.index(e.ID, len(b.run.Ops))
		b.run.Ops = append(b.run.Ops, Operation{
			ID: e.ID, Op: e.Op, Client: e.Client, Lock: e.Lock, Acq: e.Acq,
			Call: e.AtNs, Sent: e.AtNs, Return: Never, Done: Never, Status: TypeInfo, Fence: e.Fence, Value: e.Value,
		})
	case TypeOk, TypeFail, TypeInfo:
		j, ok := b.take(e.ID)
		if !ok {
			return // a completion without an invocation is ignored
		}
		complete(&b.run.Ops[j], e)
		b.backs.complete(&b.run.Ops[j], e)
	case TypeFault:
		addFault(&b.run, b.faults, e)
	case TypeAbort:
		addAbort(&b.run, e)
	case TypeStop:
		addStop(&b.run, e)
	case TypeWire:
		b.run.Wire = append(b.run.Wire, wireLine(e))
	}
}

// addStop applies a stop line to run.
func addStop(run *Run, e *Event) {
	if run.Stop == "" {
		run.Stop, run.StopVerdict = e.Detail, e.Name
		if run.Stop == "" {
			run.Stop = "the history's stop line gives no reason"
		}
	}
}

// addAbort applies an abort line to run.
func addAbort(run *Run, e *Event) {
	if run.Abort == "" {
		run.Abort = e.Error
		if run.Abort == "" {
			run.Abort = "the history's abort line gives no reason"
		}
	}
}

// addFault applies a fault line to run's fault spans (index: fault id → index in them) and
// unfired faults.
func addFault(run *Run, index map[int64]int, e *Event) {
	switch e.Phase {
	case PhaseStart:
		index[e.Fault] = len(run.Faults)
		run.Faults = append(run.Faults, FaultSpan{ID: e.Fault, Rule: e.Rule, Name: e.Name, Target: e.Target,
			Point: e.Point, Detail: e.Detail, Start: e.AtNs, End: Never, Error: e.Error, FaultMeaning: e.Meaning(),
			OutlastNs: e.OutlastNs})
	case PhaseEnd:
		if j, ok := index[e.Fault]; ok {
			run.Faults[j].End = e.AtNs
			run.Faults[j].Missed = e.Missed
			if e.Error != "" {
				run.Faults[j].Error = e.Error
			}
		}
	case PhaseUnfired:
		run.Unfired = append(run.Unfired, UnfiredFault{Rule: e.Rule, Name: e.Name, Point: e.Point, Reason: e.Detail})
	}
}

// complete applies a completion line to its operation.
func complete(o *Operation, e *Event) {
	o.Return, o.Done, o.Status, o.Error = e.AtNs, e.AtNs, e.Type, e.Error
	if e.Type == TypeInfo {
		// An unknown outcome may take effect at any time up to infinity.
		o.Return = Never
	}
	if e.Fence != 0 {
		o.Fence = e.Fence
	}
	if e.ValidityNs != 0 {
		o.ValidityNs = e.ValidityNs
	}
	if e.TTLNs != 0 {
		o.TTLNs = e.TTLNs
	}
	if e.SentNs > o.Call && e.SentNs <= e.AtNs {
		o.Sent = e.SentNs
	}
	if e.Value != nil && o.Op == OpRead {
		o.Value = e.Value
	}
}

// done returns the run with its operations in invocation order. Lines are written as they
// happen, so they nearly are already: the sort is skipped when they are.
func (b *runBuilder) done() *Run {
	byCall := func(x, y Operation) int { return cmp.Compare(x.Call, y.Call) }
	if !slices.IsSortedFunc(b.run.Ops, byCall) {
		slices.SortStableFunc(b.run.Ops, byCall)
	}
	r := b.run
	b.run, b.dense, b.open, b.faults = Run{}, nil, nil, nil
	return &r
}
