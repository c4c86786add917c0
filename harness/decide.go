package harness

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// decideEvery is how often a run asks Config.Decide about its history so far: a violation found
// at 50 ms ends the fault phase about 200 ms later, not seconds later.
const decideEvery = 200 * time.Millisecond

// decidedTail is how long clients run on after a run stopped once decided, so the operations
// under way when it was decided complete and its report shows the violation whole. The rest of
// the liveness window (Config.Tail) is skipped: a stall cannot change an unsafe verdict, and a
// run decided safe had its stuck limit pass after the last heal already.
const decidedTail = 250 * time.Millisecond

// decider keeps a copy of the history as it is written, for Config.Decide.
type decider struct {
	decide func(*history.History) (verdict, why string)
	meta   history.Meta
	mu     sync.Mutex
	events []history.Event
}

// observe is the history writer's subscription: it runs under the writer's lock, so it only
// appends.
func (d *decider) observe(e history.Event) {
	d.mu.Lock()
	d.events = append(d.events, e)
	d.mu.Unlock()
}

// wait waits until end, asking decide about the history so far every decideEvery. It returns the
// verdict the run can stop with and why, or "" when end came or ctx ended first. While overdue
// names a client whose call is overdue, no verdict is taken: the history does not show what that
// client is doing.
func (d *decider) wait(ctx context.Context, end time.Time, overdue func() string) (verdict, why string) {
	for {
		left := time.Until(end)
		if left <= 0 || !sleep(ctx, min(decideEvery, left)) {
			return "", ""
		}
		if overdue != nil && overdue() != "" {
			continue
		}
		d.mu.Lock()
		h := &history.History{Meta: d.meta, Events: slices.Clone(d.events)}
		d.mu.Unlock()
		if verdict, why := d.decide(h); verdict != "" {
			return verdict, why
		}
	}
}
