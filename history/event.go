// Package history holds the events of a lockchaos run and their JSONL encoding: one JSON object a
// line, appended as each event happens, so a killed run can still be checked (DESIGN.md §5).
package history

// Type is the kind of a history line.
type Type string

// The line types. An operation is an Invoke line and later one completion (Ok, Fail or Info) with
// the same ID; an operation with no completion returns at infinity with an unknown outcome.
const (
	TypeMeta   Type = "meta"
	TypeInvoke Type = "invoke"
	TypeOk     Type = "ok"   // the operation took effect
	TypeFail   Type = "fail" // the operation definitely did not take effect
	TypeInfo   Type = "info" // outcome unknown (timeout, connection lost)
	TypeFault  Type = "fault"
)

// Op names what an operation does.
type Op string

// The operations a client performs. Acquire and Release go to the lock service; Read and Write go
// to the harness's shared resource under an acquisition (Event.Acq).
const (
	OpAcquire Op = "acquire"
	OpRelease Op = "release"
	OpRead    Op = "read"
	OpWrite   Op = "write"
)

// Fault phases.
const (
	PhaseStart = "start"
	PhaseEnd   = "end"
)

// Meta is the first line of every history: what ran, with which parameters.
type Meta struct {
	Type      Type   `json:"type"` // always "meta"
	Algorithm string `json:"algorithm"`
	Scenario  string `json:"scenario"`
	Topology  string `json:"topology,omitempty"`
	Backend   string `json:"backend"`
	Seed      int64  `json:"seed"`
	Clients   int    `json:"clients"`
	TTLNs     int64  `json:"ttl_ns"`
	HoldNs    int64  `json:"hold_ns,omitempty"`
	// Fencing is true when the resource rejects writes whose fence is below the highest seen.
	Fencing bool `json:"fencing,omitempty"`
	// Expected is the verdict the scenario catalogue expects, "" when none.
	Expected string `json:"expected,omitempty"`
	// StuckAfterNs is how long without a grant, after all faults healed, makes a run stuck.
	StuckAfterNs int64  `json:"stuck_after_ns,omitempty"`
	Started      string `json:"started"` // RFC 3339 wall-clock time of the run's start
	Version      string `json:"version"`
	Command      string `json:"command,omitempty"` // the command line that re-runs this cell
}

// Event is one line after the meta line. Which fields are set depends on Type and Op; the JSON
// names are a contract (DESIGN.md §5): new fields may be added, none renamed.
type Event struct {
	Type Type  `json:"type"`
	ID   int64 `json:"id,omitempty"` // operation id; an invocation and its completion share it

	// Invocation fields.
	Op     Op     `json:"op,omitempty"`
	Client int    `json:"client,omitempty"` // clients are numbered from 1
	Lock   string `json:"lock,omitempty"`
	Acq    int64  `json:"acq,omitempty"` // id of the acquire a read, write or release runs under

	// AtNs is the time of the line in nanoseconds since the run's start, from one monotonic clock.
	AtNs int64 `json:"at_ns"`

	// Completion of an acquire; Fence also on a write invocation.
	Fence      uint64 `json:"fence,omitempty"`
	ValidityNs int64  `json:"validity_ns,omitempty"`
	TTLNs      int64  `json:"ttl_ns,omitempty"`

	// Value is the value read (read completion) or written (write invocation).
	Value *int64 `json:"value,omitempty"`
	Error string `json:"error,omitempty"`

	// Fault fields (Type == TypeFault).
	Phase  string `json:"phase,omitempty"`
	Fault  int64  `json:"fault,omitempty"` // fault id; start and end share it
	Name   string `json:"name,omitempty"`
	Target string `json:"target,omitempty"`
	Point  string `json:"point,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Int64 returns a pointer to v, for Event.Value.
func Int64(v int64) *int64 { return &v }
