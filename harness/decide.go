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
// under way when it was decided complete and its report shows the violation whole. The
// liveness window (Config.Tail) is skipped: a stall cannot change an unsafe verdict.
const decidedTail = 250 * time.Millisecond

// decider keeps a copy of the history as it is written, for Config.Decide.
type decider struct {
	decide func(*history.History) string
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

// wait waits out the fault phase of length total, asking decide about the history so far every
// decideEvery. It returns why the run can stop early, or "" when the phase ran its time or ctx
// ended.
func (d *decider) wait(ctx context.Context, total time.Duration) string {
	end := time.Now().Add(total)
	for {
		left := time.Until(end)
		if left <= 0 || !sleep(ctx, min(decideEvery, left)) {
			return ""
		}
		d.mu.Lock()
		h := &history.History{Meta: d.meta, Events: slices.Clone(d.events)}
		d.mu.Unlock()
		if why := d.decide(h); why != "" {
			return why
		}
	}
}
