// Package checker turns a history into verdicts: exclusion, lease-aware lock linearizability and
// resource linearizability (porcupine), fencing, liveness. It reads histories only.
package checker

// Verdict of a run (docs/design.md#checks).
type Verdict string

// Verdicts.
const (
	Safe    Verdict = "safe"
	Unsafe  Verdict = "unsafe"
	Stuck   Verdict = "stuck"
	Unknown Verdict = "unknown"
)

// Class of a safety violation.
type Class string

// Classes: the lock service granted a lock still validly held, or a client used an expired lease.
const (
	ServiceClass Class = "service"
	ClientClass  Class = "client"
)

// Latency summarises acquire latencies in milliseconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// OpRef names one operation of a violation.
type OpRef struct {
	ID       int64   `json:"id"`
	Op       string  `json:"op"`
	Client   int     `json:"client"`
	Acq      int64   `json:"acq,omitempty"`
	CallMs   float64 `json:"call_ms"`
	ReturnMs float64 `json:"return_ms"` // -1 when the operation never returned (unknown outcome)
}

// Violation is the first violation found, with the pair of operations that show it.
type Violation struct {
	// Kind is "exclusion", "service" (illegal grant), "lost-update", "fence-regression",
	// "unbacked-grant" (a grant no reply on the wire backed) or "stuck".
	Kind  string  `json:"kind"`
	Class Class   `json:"class,omitempty"`
	AtMs  float64 `json:"at_ms"`
	// A held the lock (or wrote first); B was granted (or wrote) while A's window was open.
	A           OpRef  `json:"a"`
	B           OpRef  `json:"b"`
	Explanation string `json:"explanation"`
	// Cause names the concrete operation or fault that let it happen (which client's which
	// operation at what time), when the history shows one.
	Cause string `json:"cause,omitempty"`
	// Faults are the ids of the faults (FiredFault.Fault) whose danger window was open at AtMs:
	// the faults, alone or together, under which it happened (none: no fault explains it).
	Faults []int64 `json:"faults,omitempty"`
}

// Check is the outcome of one porcupine check.
type Check struct {
	Result string  `json:"result"` // porcupine's Ok, Illegal or Unknown
	Ms     float64 `json:"ms"`
	// Visualized names the part of a long check its porcupine page shows ("" = all of it).
	Visualized string `json:"visualized,omitempty"`
}

// Result is result.json (docs/design.md#command-line-contract). Field names are a contract: add, never rename.
type Result struct {
	Algorithm           string   `json:"algorithm"`
	Scenario            string   `json:"scenario"`
	Backend             string   `json:"backend"`
	Seed                int64    `json:"seed"`
	Verdict             Verdict  `json:"verdict"`
	Expected            *string  `json:"expected"`
	ViolationClass      *Class   `json:"violation_class"`
	DurationMs          float64  `json:"duration_ms"`
	Operations          int      `json:"operations"`
	AcquiresOk          int      `json:"acquires_ok"`
	AcquiresFailed      int      `json:"acquires_failed"`
	ExclusionViolations int      `json:"exclusion_violations"`
	ServiceViolations   int      `json:"service_violations"`
	LostUpdates         int      `json:"lost_updates"`
	StaleWritesRejected int      `json:"stale_writes_rejected"`
	TTDMs               *float64 `json:"ttd_ms"`
	AcquireLatencyMs    Latency  `json:"acquire_latency_ms"`
	ThroughputCSPerS    float64  `json:"throughput_cs_per_s"`
	LongestStallMs      float64  `json:"longest_stall_ms"`
	// HeldMs is how long some client held the lock: the union of the holding windows
	// (docs/design.md#checks, from each grant to the last access under it).
	HeldMs         float64    `json:"held_ms"`
	CheckerMs      float64    `json:"checker_ms"`
	FirstViolation *Violation `json:"first_violation"`
	// ClassesSeen lists every class of violation the run showed (a run can show both).
	ClassesSeen   []Class  `json:"classes_seen,omitempty"`
	LockCheck     Check    `json:"lock_check"`
	ResourceCheck Check    `json:"resource_check"`
	FaultErrors   []string `json:"fault_errors,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
	// Matches is set when Expected is: whether Verdict (and class, if the expectation names
	// one) matches it.
	Matches *bool `json:"matches_expectation,omitempty"`

	// Evidence (docs/design.md#evidence): what shows the run could have failed.
	FaultsPlanned  []PlannedFault `json:"faults_planned"`
	FaultsFired    []FiredFault   `json:"faults_fired"`
	WritesOk       int            `json:"writes_ok"`
	WritesRejected int            `json:"writes_rejected"`
	// WritesInWindow and GrantsInWindow count the writes, and the grants to clients other than
	// the faulted ones, in the danger windows: from each fault's start until one lease after it
	// healed.
	WritesInWindow int    `json:"writes_in_window"`
	GrantsInWindow int    `json:"grants_in_window"`
	DangerWindows  []Span `json:"danger_windows"`
	// Evidence is "ok", or one line saying what is missing; a safe run without evidence is
	// unknown. An unsafe or stuck run's violation is its own evidence.
	Evidence string `json:"evidence"`
	// FenceRegressions counts accepted writes whose fence did not go forward.
	FenceRegressions int `json:"fence_regressions"`
	// ExpiredWrites counts writes made after the holder's own validity (validity_ns) ended.
	ExpiredWrites int `json:"expired_writes"`
	// UnbackedGrants counts the grants a client reported while every reply its requests got on
	// its parsed link refused them, or none came (history.Operation.Unbacked): client-class
	// violations of their own.
	UnbackedGrants int `json:"unbacked_grants"`
	// DecidedBy says in one line what decided the verdict, with the numbers that did.
	DecidedBy string `json:"decided_by"`
	// Stopped says why the run ended its fault phase early, once its first violation was found
	// while it ran (its stop line); empty for a run that ran its full time.
	Stopped string `json:"stopped,omitempty"`
}
