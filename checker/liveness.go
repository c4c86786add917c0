package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// A stall is a time in which clients wanted the lock and nobody got it. It runs from the moment
// some client was waiting (an acquire invoked and not yet completed) after the previous grant, or
// from that grant if clients were already waiting, to the next grant; the last one runs to the
// last moment anyone was still waiting (the end of the history, for an acquire that never
// completed). Short gaps in which no one happens to wait (a client between a timed-out acquire and
// its retry) do not end a stall: only a grant does.
type stall struct {
	start, end int64
	waiter     int // index of an acquire waiting in it
	prev       int // index of the grant before it, -1 if none
}

// liveness computes the longest stall outside faults and whether the run is stuck (DESIGN.md
// §6.5).
//
// Time inside a fault, and one TTL of grace after it heals (leases of a crashed or cut-off holder
// must run out first), is not counted: a stall is cut into the pieces outside those spans. A fault
// that never ended (a crash, a node killed for good) is taken to last only its start instant, for
// the system is expected to go on without what it killed: a naive lock whose holder crashed must
// show up as stuck. The run is stuck when a piece after the last heal (+ grace) is at least
// StuckAfter long.
func (r *run) liveness() (longest time.Duration, stuck *Violation) {
	var sw stallSweep
	sw.start()
	sw.feed(r.stallEvents(0, nil))
	return r.stallPieces(sw.finish(r.end))
}

// stallPieces cuts stalls into the pieces outside faults (plus grace) and returns the longest
// piece and the first that makes the run stuck.
func (r *run) stallPieces(stalls []stall) (longest time.Duration, stuck *Violation) {
	ex := r.excluded()
	var lastHeal int64
	for _, e := range ex {
		lastHeal = max(lastHeal, e[1])
	}
	for _, s := range stalls {
		for _, p := range subtract(s.start, s.end, ex) {
			d := time.Duration(p[1] - p[0])
			longest = max(longest, d)
			if stuck == nil && p[0] >= lastHeal && d >= r.opts.StuckAfter {
				v := &Violation{Kind: "stuck", AtMs: ms(p[0] + int64(r.opts.StuckAfter)),
					Explanation: fmt.Sprintf("clients waited %v from %.3fms with no grant, after every fault had healed (limit %v)",
						d.Round(time.Millisecond), ms(p[0]), r.opts.StuckAfter)}
				if s.waiter >= 0 {
					v.B = ref(&r.ops[s.waiter])
				}
				if s.prev >= 0 {
					v.A = ref(&r.ops[s.prev])
				}
				stuck = v
			}
		}
	}
	return longest, stuck
}

// stallEvent is an acquire's invocation (+1) or completion (-1), for the stall sweep.
type stallEvent struct {
	t     int64
	delta int
	grant bool
	op    int   // index of the acquire, -1 for one of another segment
	id    int64 // its id, which orders events at one instant
}

// stallEvents returns the invocations and completions of the acquires in time order. The
// invocations of acquires invoked before start (carried over from the previous segment, which
// sweeps them) are left out; those of waiting, still open at the segment's cut, are added.
func (r *run) stallEvents(start int64, waiting []history.Operation) []stallEvent {
	evs := make([]stallEvent, 0, len(r.ops)/2+len(waiting))
	for i := range r.ops {
		o := &r.ops[i]
		if o.Op != history.OpAcquire {
			continue
		}
		if o.Call >= start {
			evs = append(evs, stallEvent{t: o.Call, delta: 1, op: i, id: o.ID})
		}
		done := min(o.Done, r.end)
		evs = append(evs, stallEvent{t: max(done, o.Call), delta: -1, grant: o.Ok(), op: i, id: o.ID})
	}
	for _, o := range waiting {
		evs = append(evs, stallEvent{t: o.Call, delta: 1, op: -1, id: o.ID})
	}
	// At one instant, completions come before invocations, so a stall starts after a grant; then
	// the order of the ids, so that the sweep does not depend on how the history was cut.
	slices.SortFunc(evs, func(a, b stallEvent) int {
		return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.delta, b.delta), cmp.Compare(a.id, b.id))
	})
	return evs
}

// stallSweep sweeps acquire invocations, completions and grants in time order, one segment of
// the history after the other.
type stallSweep struct {
	out      []stall
	waiting  int
	cur      stall
	lastWait int64
}

func (s *stallSweep) start() { s.cur = stall{start: -1, prev: -1} }

func (s *stallSweep) feed(evs []stallEvent) {
	for _, e := range evs {
		if e.delta < 0 {
			s.waiting--
			s.lastWait = e.t
		}
		if e.grant {
			if s.cur.start >= 0 && e.t > s.cur.start {
				s.cur.end = e.t
				s.out = append(s.out, s.cur)
			}
			s.cur = stall{start: -1, prev: e.op}
			if s.waiting > 0 {
				s.cur.start, s.cur.waiter = e.t, e.op
			}
		}
		if e.delta > 0 {
			s.waiting++
			if s.cur.start < 0 {
				s.cur.start, s.cur.waiter = e.t, e.op
			}
		}
	}
}

// take returns the stalls completed so far and forgets them; the operation indices of the one
// in progress are dropped, for they belong to a segment that is done.
func (s *stallSweep) take() []stall {
	out := s.out
	s.out = nil
	s.cur.waiter, s.cur.prev = -1, -1
	return out
}

// finish closes the last stall at end, the run's end, and returns the stalls not taken.
func (s *stallSweep) finish(end int64) []stall {
	if s.cur.start >= 0 {
		if s.waiting > 0 {
			s.lastWait = end
		}
		if s.lastWait > s.cur.start {
			s.cur.end = s.lastWait
			s.out = append(s.out, s.cur)
		}
	}
	return s.out
}

// excluded lists the fault spans plus grace, merged and sorted.
func (r *run) excluded() [][2]int64 {
	grace := max(r.meta.TTLNs, 0)
	var ex [][2]int64
	for _, f := range r.faults {
		end := f.End
		if end == history.Never || end < f.Start {
			end = f.Start
		}
		ex = append(ex, [2]int64{f.Start, end + grace})
	}
	slices.SortFunc(ex, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var merged [][2]int64
	for _, e := range ex {
		if n := len(merged); n > 0 && e[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], e[1])
			continue
		}
		merged = append(merged, e)
	}
	return merged
}

// subtract returns the pieces of [s, e] outside the merged, sorted spans ex.
func subtract(s, e int64, ex [][2]int64) [][2]int64 {
	var out [][2]int64
	i, _ := slices.BinarySearchFunc(ex, s, func(x [2]int64, t int64) int { return cmp.Compare(x[1], t) })
	for ; i < len(ex) && ex[i][0] < e; i++ {
		if ex[i][0] > s {
			out = append(out, [2]int64{s, ex[i][0]})
		}
		s = max(s, ex[i][1])
	}
	if e > s {
		out = append(out, [2]int64{s, e})
	}
	return out
}
