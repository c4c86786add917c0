package history

import (
	"math"
	"sort"
)

// Never is the return time of an operation that has no completion: it returns at infinity.
const Never int64 = math.MaxInt64

// Operation is an invocation paired with its completion.
type Operation struct {
	ID     int64
	Op     Op
	Client int
	Lock   string
	Acq    int64
	Call   int64 // invocation time, ns since run start
	// Sent is, for an acquire, when the attempt that won was sent (its completion's sent_ns);
	// Call when unknown. The grant happened in [Sent, Return].
	Sent   int64
	Return int64 // completion time; Never when there is none or the outcome is unknown
	Done   int64 // when the completion line was written (Never if none), even for unknown outcomes
	// Status is TypeOk, TypeFail or TypeInfo; TypeInfo too when there is no completion.
	Status     Type
	Fence      uint64 // acquire: granted fence; write: the fence the write carried
	ValidityNs int64
	TTLNs      int64
	// Value is the value a read returned or a write wrote.
	Value *int64
	Error string
}

// Ok reports whether the operation definitely took effect.
func (o *Operation) Ok() bool { return o.Status == TypeOk }

// FaultSpan is a fault from its start line to its end line (End is Never if it never ended).
type FaultSpan struct {
	ID     int64
	Rule   int // 1-based index of the planned fault (history.Meta.Faults), 0 if not known
	Name   string
	Target string
	Point  string
	Detail string
	Start  int64
	End    int64
	Error  string // set when injecting or healing the fault failed
}

// Operations pairs invocations with completions, in invocation order. A completion without an
// invocation is ignored.
func Operations(events []Event) []Operation {
	ops := make([]Operation, 0, len(events)/2)
	index := make(map[int64]int, len(events)/2)
	for i := range events {
		e := &events[i]
		switch e.Type {
		case TypeInvoke:
			index[e.ID] = len(ops)
			ops = append(ops, Operation{
				ID: e.ID, Op: e.Op, Client: e.Client, Lock: e.Lock, Acq: e.Acq,
				Call: e.AtNs, Sent: e.AtNs, Return: Never, Done: Never, Status: TypeInfo, Fence: e.Fence, Value: e.Value,
			})
		case TypeOk, TypeFail, TypeInfo:
			j, ok := index[e.ID]
			if !ok {
				continue
			}
			delete(index, e.ID)
			o := &ops[j]
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
	}
	sort.SliceStable(ops, func(a, b int) bool { return ops[a].Call < ops[b].Call })
	return ops
}

// Faults pairs fault start and end lines, in start order.
func Faults(events []Event) []FaultSpan {
	var spans []FaultSpan
	index := map[int64]int{}
	for i := range events {
		e := &events[i]
		if e.Type != TypeFault {
			continue
		}
		switch e.Phase {
		case PhaseStart:
			index[e.Fault] = len(spans)
			spans = append(spans, FaultSpan{ID: e.Fault, Rule: e.Rule, Name: e.Name, Target: e.Target, Point: e.Point,
				Detail: e.Detail, Start: e.AtNs, End: Never, Error: e.Error})
		case PhaseEnd:
			if j, ok := index[e.Fault]; ok {
				spans[j].End = e.AtNs
				if e.Error != "" {
					spans[j].Error = e.Error
				}
			}
		}
	}
	return spans
}

// UnfiredFault is a planned fault that never fired, with the reason the run gave.
type UnfiredFault struct {
	Rule   int
	Name   string
	Point  string
	Reason string
}

// Unfired lists the unfired lines of a history (PhaseUnfired), in file order.
func Unfired(events []Event) []UnfiredFault {
	var out []UnfiredFault
	for i := range events {
		e := &events[i]
		if e.Type == TypeFault && e.Phase == PhaseUnfired {
			out = append(out, UnfiredFault{Rule: e.Rule, Name: e.Name, Point: e.Point, Reason: e.Detail})
		}
	}
	return out
}
