package harness

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// A client that stops answering — its library hung, its process gone quiet — must never leave a
// safe run behind (docs/design.md#faults-sized-to-the-lease): a run that stops once decided while a client's call is overdue
// would judge only the clients still answering. So each client says what call it is in and by
// when it was told to answer; the run does not stop early while one is overdue, and a client still
// in a call when the run ends, past its deadline and a grace, ends the run as unknown, named.

// answerGrace is how long past the end of the run the harness waits for a client still in a
// call before it names the client as not answering: past any deadline the call was given, and
// past a process client's own grace (5 s by default), which then names it itself.
const answerGrace = 10 * time.Second

// call is a client's call of its Locker under way.
type call struct {
	what     string // "acquire (op 41)", "release (op 42)", "validity check"
	since    time.Time
	deadline time.Time
}

// calls is the call a client is in, if any.
type calls struct{ cur atomic.Pointer[call] }

// begin notes a call of what with timeout, until the returned end.
func (cs *calls) begin(what string, timeout time.Duration) (end func()) {
	now := time.Now()
	c := &call{what: what, since: now, deadline: now.Add(timeout)}
	cs.cur.Store(c)
	return func() { cs.cur.CompareAndSwap(c, nil) }
}

// overdue says which client's call is past its deadline, not because a fault holds that client
// (held: whether a fault held client c at any moment since t), or "" when none is.
func overdue(clients []*client, held func(c int, since time.Time) bool, now time.Time, rel func(time.Time) string) string {
	var late []string
	for _, c := range clients {
		k := c.calls.cur.Load()
		if k == nil || !now.After(k.deadline) || held(c.id, k.since) {
			continue
		}
		late = append(late, fmt.Sprintf("client %d's %s, called at %s, was due by %s", c.id, k.what, rel(k.since), rel(k.deadline)))
	}
	return strings.Join(late, "; ")
}

// notAnswering records, for the clients still in a call once the run has waited answerGrace for
// them, that they stopped answering (an abort line: the run proves no safety), and returns the
// error that ends the run; nil when none is.
func notAnswering(rec *recorder, clients []*client, rel func(time.Time) string) error {
	var late []string
	for _, c := range clients {
		if k := c.calls.cur.Load(); k != nil {
			late = append(late, fmt.Sprintf("client %d stopped answering: its %s, called at %s and due by %s, had not returned %s after the run ended",
				c.id, k.what, rel(k.since), rel(k.deadline), answerGrace))
		}
	}
	if len(late) == 0 {
		return nil
	}
	err := fmt.Errorf("%s", strings.Join(late, "; "))
	rec.write(history.Event{Type: history.TypeAbort, Error: err.Error()}, true)
	_ = rec.w.Sync()
	return err
}
