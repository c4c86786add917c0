package history

import (
	"cmp"
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
	run    Run
	open   map[int64]int // operation id → index in run.Ops, until its completion
	faults map[int64]int // fault id → index in run.Faults
}

func (b *runBuilder) init(hint int) {
	b.run.Ops = make([]Operation, 0, hint)
	b.open = map[int64]int{}
	b.faults = map[int64]int{}
}

func (b *runBuilder) add(e *Event) {
	b.run.End = max(b.run.End, e.AtNs)
	switch e.Type {
	case TypeInvoke:
		b.open[e.ID] = len(b.run.Ops)
		b.run.Ops = append(b.run.Ops, Operation{
			ID: e.ID, Op: e.Op, Client: e.Client, Lock: e.Lock, Acq: e.Acq,
			Call: e.AtNs, Sent: e.AtNs, Return: Never, Done: Never, Status: TypeInfo, Fence: e.Fence, Value: e.Value,
		})
	case TypeOk, TypeFail, TypeInfo:
		j, ok := b.open[e.ID]
		if !ok {
			return // a completion without an invocation is ignored
		}
		delete(b.open, e.ID)
		complete(&b.run.Ops[j], e)
	case TypeFault:
		switch e.Phase {
		case PhaseStart:
			b.faults[e.Fault] = len(b.run.Faults)
			b.run.Faults = append(b.run.Faults, FaultSpan{ID: e.Fault, Rule: e.Rule, Name: e.Name, Target: e.Target,
				Point: e.Point, Detail: e.Detail, Start: e.AtNs, End: Never, Error: e.Error})
		case PhaseEnd:
			if j, ok := b.faults[e.Fault]; ok {
				b.run.Faults[j].End = e.AtNs
				if e.Error != "" {
					b.run.Faults[j].Error = e.Error
				}
			}
		case PhaseUnfired:
			b.run.Unfired = append(b.run.Unfired, UnfiredFault{Rule: e.Rule, Name: e.Name, Point: e.Point, Reason: e.Detail})
		}
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
	b.run, b.open, b.faults = Run{}, nil, nil
	return &r
}
