// Package history holds the events of a lockchaos run and their JSONL encoding: one JSON object a
// line, appended as each event happens, so a killed run can still be checked (docs/design.md#workload-and-history).
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
	// TypeAbort says the run ended before its time, Error says why (a client broke its protocol,
	// a lock's code panicked). A run that ran its course has none. What a run cut short shows is
	// judged, but it proves no safety: the checker makes it unknown unless it is unsafe.
	TypeAbort Type = "abort"
	// TypeStop says the run ended early because its verdict could no longer change: Name is the
	// verdict so far ("unsafe", "safe" or "stuck"), Detail why. Unsafe: a violation was found
	// while the run went on — a violation in a prefix of a history is one in the whole history,
	// as linearizability is prefix-closed, so a run stopped unsafe whose whole history is not is
	// judged unknown. Safe: every planned fault fired and was over (a crash or a kill for good at
	// its instant), and a lease and the stuck limit passed after the last heal with the evidence
	// in. Stuck: every planned fault fired and was over, and clients then waited the stuck limit
	// with no grant; a run stopped stuck whose whole history is not stuck is judged unknown.
	TypeStop Type = "stop"
	// TypeWire is one of a lock's commands or replies as it crossed a client's parsed link
	// (docs/design.md#wire-points): when a request left the proxy for the server, or a reply left it for the
	// client. Only the runs whose faults act on the wire parse their links and have these lines;
	// a cause cites them ("client 3's DEL reached redis-1 at 1.32 s") instead of inferring.
	TypeWire Type = "wire"
)

// Wire directions.
const (
	WireRequest = "request"
	WireReply   = "reply"
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

// Fault phases. A planned fault that never fired gets one PhaseUnfired line at the end of the
// run, with the reason in Detail (its point was never reached, its target did not exist).
const (
	PhaseStart   = "start"
	PhaseEnd     = "end"
	PhaseUnfired = "unfired"
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
	StuckAfterNs int64 `json:"stuck_after_ns,omitempty"`
	// SessionTimeoutNs is the ZooKeeper/etcd session timeout, when the lock has one: with the
	// TTL it sizes the danger window after a fault (docs/design.md#evidence).
	SessionTimeoutNs int64 `json:"session_timeout_ns,omitempty"`
	// ServerIdleTimeoutNs is the SQL servers' session idle timeout, when the run set one: the
	// server ends a session that sent nothing for that long, and its session lock with it.
	ServerIdleTimeoutNs int64 `json:"server_idle_timeout_ns,omitempty"`
	// Faults are the scenario's planned faults, in order; fault lines name theirs by Rule.
	Faults  []PlannedFault `json:"faults,omitempty"`
	Started string         `json:"started"` // RFC 3339 wall-clock time of the run's start
	Version string         `json:"version"`
	Command string         `json:"command,omitempty"` // the command line that re-runs this cell
}

// NoTTL is the ttl_ns of an acquire whose lease never expires on the server (Event.TTLNs).
const NoTTL = -1

// Event is one line after the meta line. Which fields are set depends on Type and Op; the JSON
// names are a contract (docs/design.md#workload-and-history): new fields may be added, none renamed.
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
	// TTLNs is the lease the server enforces; absent (0), the run's TTL (meta) is assumed. NoTTL
	// (-1) says the lease has none: the server holds the lock until it is released or the
	// holder's session ends (a session lock, docs/design.md#session-locks-and-more-services), and the checker never expires it.
	TTLNs int64 `json:"ttl_ns,omitempty"`
	// SentNs, on an acquire's completion, is when the attempt that won the lock was sent: the
	// acquire's effect happened between it and the completion, whatever the earlier retries did.
	// Absent (0) means the invocation time is the only bound known.
	SentNs int64 `json:"sent_ns,omitempty"`

	// Value is the value read (read completion) or written (write invocation).
	Value *int64 `json:"value,omitempty"`
	Error string `json:"error,omitempty"`

	// Fault fields (Type == TypeFault).
	Phase string `json:"phase,omitempty"`
	Fault int64  `json:"fault,omitempty"` // fault id; start and end share it
	// Rule is the 1-based index, in the meta line's faults, of the planned fault this line is an
	// occurrence of (0 when the history predates planned faults).
	Rule   int    `json:"rule,omitempty"`
	Name   string `json:"name,omitempty"`
	Target string `json:"target,omitempty"`
	Point  string `json:"point,omitempty"`
	Detail string `json:"detail,omitempty"`
	// FaultMeaning, on a start line, is what the fault acts on, whether it lasts the run,
	// whether the line is its arming, and the clients and nodes it targets, as resolved. Read
	// it with Meaning, which also knows the lines written before these fields.
	FaultMeaning
	// OutlastNs, on a start line, is the lease (plus the lock's background renewal period) the
	// occurrence was sized to outlast, as the lock held it when the fault fired (docs/design.md#faults-sized-to-the-lease):
	// an occurrence that lasted less, or under a lock whose lease turned out longer, put nothing
	// at risk, and the checker says so. 0 for a fault not sized to outlast the lease.
	OutlastNs int64 `json:"outlast_ns,omitempty"`
	// Missed, on an end line, says what the occurrence was meant to bring about and did not, as
	// the nemesis saw at its end: it waited for another client to reach its until point and its
	// cap (or the fault phase) ran out first, or it lasted less than the lease it was sized to
	// outlast, the lease having grown since it fired. The moment the fault aims at never came:
	// the checker takes it as missing evidence (docs/design.md#faults-sized-to-the-lease).
	Missed string `json:"missed,omitempty"`

	// Wire fields (Type == TypeWire), with Client and Detail (the message, e.g. "DEL lock" or
	// ":1"). Cmd and Key are the request's, also on its reply.
	Node string `json:"node,omitempty"`
	Dir  string `json:"dir,omitempty"` // WireRequest or WireReply
	Cmd  string `json:"cmd,omitempty"`
	Key  string `json:"key,omitempty"`
	// Refused, on a reply, says that it did not do what its request asked: an error, or a null
	// or 0 that is not a script's (SET NX's nil, SETNX's :0). An acquisition granted while its
	// client got only refusals took something else for a grant (Operation.Unbacked).
	Refused bool `json:"refused,omitempty"`
}

// Int64 returns a pointer to v, for Event.Value.
func Int64(v int64) *int64 { return &v }

// PlannedFault is one fault of the scenario as planned before the run: what, where and when.
type PlannedFault struct {
	Kind    string `json:"kind"`
	Point   string `json:"point,omitempty"`    // event-triggered at this named point
	Client  int    `json:"client,omitempty"`   // only this client's point triggers it
	AtNs    int64  `json:"at_ns,omitempty"`    // timed: first firing, since the run's start
	ForNs   int64  `json:"for_ns,omitempty"`   // how long each occurrence lasts
	EveryNs int64  `json:"every_ns,omitempty"` // timed: the period it repeats at (0: once)
	Times   int    `json:"times,omitempty"`    // how often it may fire (0: once; -1: no bound)
	Clients string `json:"clients,omitempty"`  // target clients selector
	Nodes   string `json:"nodes,omitempty"`    // target nodes selector
	// Setup marks a fault that shapes the run rather than attacks it (a partition in force from
	// the start that decides who reaches which node): it has no danger window of its own.
	Setup bool `json:"setup,omitempty"`
	// Wire says at which command on the wire the fault acts (docs/design.md#wire-points), e.g. "before DEL".
	Wire string `json:"wire,omitempty"`
	// ActsOn and Lasting are what the fault kind declares its occurrences do (FaultMeaning);
	// read them with Meaning, which also knows the meta lines written before these fields.
	ActsOn  string `json:"acts_on,omitempty"`
	Lasting bool   `json:"lasting,omitempty"`
}
