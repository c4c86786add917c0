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

// liveness computes the longest stall outside faults and whether the run is stuck
// (docs/design.md#checks).
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

// stallEvent is, for the stall sweep, an acquire's invocation (+1 waiter) or completion (-1; a
// grant makes its client a holder until its lease ends), a release's invocation or a crash (the
// client holds no longer).
type stallEvent struct {
	t     int64
	delta int
	grant bool
	// free: the client stops holding (its release was invoked, or it crashed).
	free   bool
	client int
	until  int64 // a grant's lease end (history.Never without a TTL)
	op     int   // index of the acquire, -1 for one of another segment or a release
	id     int64 // its id, which orders events at one instant
}

// stallEvents returns the sweep's events in time order: acquires' invocations and completions,
// releases' invocations and client crashes. The invocations of acquires invoked before start
// (carried over from the previous segment, which sweeps them) are left out; those of waiting,
// still open at the segment's cut, are added.
func (r *run) stallEvents(start int64, waiting []history.Operation) []stallEvent {
	evs := make([]stallEvent, 0, len(r.ops)/2+len(waiting))
	for i := range r.ops {
		o := &r.ops[i]
		switch o.Op {
		case history.OpAcquire:
		case history.OpRelease:
			if o.Call >= start {
				evs = append(evs, stallEvent{t: o.Call, free: true, client: o.Client, op: -1, id: o.ID})
			}
			continue
		default:
			continue
		}
		if o.Call >= start {
			evs = append(evs, stallEvent{t: o.Call, delta: 1, op: i, id: o.ID})
		}
		done := min(o.Done, r.end)
		e := stallEvent{t: max(done, o.Call), delta: -1, grant: o.Ok(), client: o.Client, until: history.Never, op: i, id: o.ID}
		if ttl := r.ttl(o); ttl > 0 {
			// The latest the lease can end, counted from the grant's reply: a stall must not be
			// called while a holder may still rightly hold.
			e.until = e.t + ttl
		}
		evs = append(evs, e)
	}
	for _, o := range waiting {
		evs = append(evs, stallEvent{t: o.Call, delta: 1, op: -1, id: o.ID})
	}
	for _, f := range r.faults {
		if f.KillsClients() && f.Error == "" && f.Start >= start {
			for _, c := range f.TargetClients {
				evs = append(evs, stallEvent{t: f.Start, free: true, client: c, op: -1})
			}
		}
	}
	// At one instant, completions come before invocations, so a stall starts after a grant; then
	// the order of the ids, so that the sweep does not depend on how the history was cut.
	slices.SortFunc(evs, func(a, b stallEvent) int {
		return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.delta, b.delta), cmp.Compare(a.id, b.id))
	})
	return evs
}

// stallSweep sweeps the stall events in time order, one segment of the history after the other.
// A stall cannot start while a live client holds the lock under a lease that has not run out:
// waiting for a holder is contention, not a stall. It starts when some client waits and nobody
// holds — at a holder's release, crash or lease end, or at a wait with the lock free — and
// ends at the next grant.
type stallSweep struct {
	out      []stall
	waiting  int
	cur      stall
	lastWait int64
	lastOp   int           // the acquire most recently invoked, to name a stall's waiter
	holders  map[int]int64 // client → the end of its lease, while it holds
}

func (s *stallSweep) start() {
	s.cur, s.lastOp, s.holders = stall{start: -1, prev: -1, waiter: -1}, -1, map[int]int64{}
}

// expire drops the holders whose leases ended by t; a stall starts when the last of them ends
// with clients waiting.
func (s *stallSweep) expire(t int64) {
	if len(s.holders) == 0 {
		return
	}
	var last int64
	for c, until := range s.holders {
		if until <= t {
			delete(s.holders, c)
			last = max(last, until)
		}
	}
	if last > 0 && len(s.holders) == 0 {
		s.open(last)
	}
}

// open starts a stall at t if clients wait, nobody holds and none is under way.
func (s *stallSweep) open(t int64) {
	if s.cur.start < 0 && s.waiting > 0 && len(s.holders) == 0 {
		s.cur.start, s.cur.waiter = t, s.lastOp
	}
}

func (s *stallSweep) feed(evs []stallEvent) {
	for _, e := range evs {
		s.expire(e.t)
		switch {
		case e.free:
			if _, ok := s.holders[e.client]; ok {
				delete(s.holders, e.client)
				s.open(e.t)
			}
			continue
		case e.delta < 0:
			s.waiting--
			s.lastWait = e.t
		}
		if e.grant {
			if s.cur.start >= 0 && e.t > s.cur.start {
				s.cur.end = e.t
				s.out = append(s.out, s.cur)
			}
			s.cur = stall{start: -1, prev: e.op, waiter: -1}
			if e.until > e.t {
				s.holders[e.client] = e.until
			}
			s.open(e.t)
		}
		if e.delta > 0 {
			s.waiting++
			if e.op >= 0 {
				s.lastOp = e.op
			}
			s.open(e.t)
		}
	}
}

// take returns the stalls completed so far and forgets them; the operation indices of the one
// in progress are dropped, for they belong to a segment that is done.
func (s *stallSweep) take() []stall {
	out := s.out
	s.out = nil
	s.cur.waiter, s.cur.prev, s.lastOp = -1, -1, -1
	return out
}

// finish closes the last stall at end, the run's end, and returns the stalls not taken.
func (s *stallSweep) finish(end int64) []stall {
	s.expire(end)
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
