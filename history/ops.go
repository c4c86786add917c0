package history

import "math"

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
	// Unbacked, on a granted acquire, says what the wire showed when the client's requests
	// during the acquisition got no reply that did what it asked (history.Event.Refused): each
	// was refused, or none came before the grant. The client took an error, a refusal or a
	// timeout for a grant. "" when a reply backed it, or when its link is not parsed.
	Unbacked string
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
	// OutlastNs is the lease the occurrence was sized to outlast (Event.OutlastNs), 0 if none;
	// Missed what it did not bring about, from its end line (Event.Missed), "" if nothing.
	OutlastNs int64
	Missed    string
	// FaultMeaning is what the fault did, from its start line (Event.Meaning: also for the
	// lines written before they carried it).
	FaultMeaning
}

// Operations pairs invocations with completions, in invocation order. A completion without an
// invocation is ignored.
func Operations(events []Event) []Operation { return (&History{Events: events}).Run().Ops }

// Faults pairs fault start and end lines, in start order.
func Faults(events []Event) []FaultSpan { return (&History{Events: events}).Run().Faults }

// UnfiredFault is a planned fault that never fired, with the reason the run gave.
type UnfiredFault struct {
	Rule   int
	Name   string
	Point  string
	Reason string
}

// Unfired lists the unfired lines of a history (PhaseUnfired), in file order.
func Unfired(events []Event) []UnfiredFault { return (&History{Events: events}).Run().Unfired }
