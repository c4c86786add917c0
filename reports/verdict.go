package reports

import (
	"strings"

	"github.com/lockchaos/lockchaos/checker"
)

// Categories a run is coloured by, on the report badge and in the matrix. They refine the verdict
// by the class of the first violation, because the class decides the fix (docs/design.md#checks).
const (
	catSafe          = "safe"
	catUnsafe        = "unsafe" // unsafe, class not known
	catUnsafeService = "unsafe-service"
	catUnsafeClient  = "unsafe-client"
	catStuck         = "stuck"
	catUnknown       = "unknown"
	catNA            = "n/a"
)

// category names what a result shows: its verdict, refined by violation class when unsafe.
func category(r *checker.Result) string {
	if r == nil {
		return catUnknown
	}
	switch r.Verdict {
	case checker.Safe:
		return catSafe
	case checker.Stuck:
		return catStuck
	case checker.Unsafe:
		c := r.ViolationClass
		if c == nil && r.FirstViolation != nil && r.FirstViolation.Class != "" {
			c = &r.FirstViolation.Class
		}
		if c != nil {
			switch *c {
			case checker.ServiceClass:
				return catUnsafeService
			case checker.ClientClass:
				return catUnsafeClient
			}
		}
		return catUnsafe
	}
	return catUnknown
}

// expectsNA reports whether an expectation says the cell does not apply ("-" and its spellings).
func expectsNA(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "-", "–", "n/a", "na":
		return true
	}
	return false
}

// expectedOf returns the expectation for a result: the caller's, else the one result.json carries.
func expectedOf(given string, r *checker.Result) string {
	if given != "" {
		return given
	}
	if r != nil && r.Expected != nil {
		return *r.Expected
	}
	return ""
}

// matchOf judges a result against an expectation, as checker.Matches does (the one judge): ok is
// false when there is nothing to judge against (no expectation, or n/a).
func matchOf(expected string, r *checker.Result) (match, ok bool) {
	if strings.TrimSpace(expected) == "" || expectsNA(expected) {
		return false, false
	}
	return checker.Matches(r, expected), true
}

// unbackedExplanation says what an unbacked grant (checker's "unbacked-grant") means and how it is
// fixed: its class is the client's, but not for the client class's usual reason.
const unbackedExplanation = "The client reported a grant that no reply from the service backed: every reply its requests got " +
	"during the acquisition refused them (an error, a nil, a 0), or none came before it went on as the holder. " +
	"The service never granted it that lock. Fix: count only a successful reply as a grant; an error or a timeout " +
	"means \"not acquired\" (after a timeout, release what the request may have set, or wait out its lease)."

// classExplanation says in plain language what a class of violation means and how it is fixed.
func classExplanation(c string) string {
	switch c {
	case string(checker.ServiceClass), catUnsafeService:
		return "The lock service granted the lock while a valid lease was still held. " +
			"This is the service's fault, typically caused by a failover to a replica that had not seen the lock, " +
			"a server restart that lost it, a clock jump that expired it early, or an algorithm that computes expiry on the client. " +
			"Fixes: fencing tokens checked by the resource, WAIT/fsync before granting, delayed restarts, monotonic clocks, " +
			"or a consensus-based lock service."
	case string(checker.ClientClass), catUnsafeClient:
		return "The lock service behaved correctly, but a holder kept using its lease after it expired — " +
			"typically after a process pause (GC, SIGSTOP) or a long network delay between its validity check and its write. " +
			"No lease can prevent this on its own. Fix: fencing tokens, checked by the resource on every write."
	case catStuck:
		return "No client was granted the lock for the configured limit after every fault had healed: " +
			"the lock is held by nobody alive and never expires (e.g. a holder crashed with a lock that has no TTL). " +
			"Fix: a lease (TTL) on the lock, or a session-bound lock such as ZooKeeper's ephemeral nodes."
	case catUnknown:
		return "The checker could not decide (a porcupine check timed out, or there were too few operations). " +
			"Unknown is never safe: re-run longer, or with a larger checker timeout."
	}
	return ""
}
