package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// stallThreshold is how late the harness's own heartbeat may be before the gap is recorded.
const stallThreshold = 250 * time.Millisecond

// stallIDBase keeps the ids of harness-stall spans apart from the nemesis's fault ids.
const stallIDBase = 1 << 40

// watchStalls records the times the harness itself was not scheduled (an overloaded machine, a
// stop-the-world pause) as "harness-stall" spans in the history, acting on the harness
// (history.ActsOnHarness: the field, not the name, tells the checker it is no fault of the run).
// Nothing the clients did in such a span says anything about the lock's liveness, and the report
// shows the user where it happened.
func watchStalls(ctx context.Context, rec *recorder) {
	const tick = 20 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	last := rec.now()
	id := int64(stallIDBase)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := rec.now()
		if gap := time.Duration(now - last); gap > stallThreshold+tick {
			id++
			detail := fmt.Sprintf("the harness was not scheduled for %v (machine overloaded?)", gap.Round(time.Millisecond))
			rec.fault(history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: id,
				Name: "harness-stall", Target: "harness", Detail: detail, AtNs: last,
				FaultMeaning: history.FaultMeaning{ActsOn: history.ActsOnHarness}})
			rec.fault(history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: id, AtNs: now})
		}
		last = now
	}
}
