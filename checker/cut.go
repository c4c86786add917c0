package checker

import (
	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// The states at a cut between two segments of a long history (history.ReadSegments), which the
// next segment's lock and resource checks start from. A cut is only taken where the state is
// certain; where it is not, the history is checked whole.

// lockExit is the lock's state at the end of a segment, found as lockChunks finds a cut with
// waiters (see there for why it is exact): L, the segment's acquire that every legal order puts
// last, was released by its one release R before the cut, so the lock is free since R's call.
type lockExit struct {
	free     int64 // R's call
	leaseEnd int64 // L's call plus its lease (Never without TTL)
	maxRet   int64 // the latest return of the segment's acquires
}

// lockExit returns the lock's state at the end of r, a segment whose operations all returned
// before cut, and whether it is certain.
func (r *run) lockExit(cut int64) (lockExit, bool) {
	released := map[int]bool{}
	rels := map[int][]*history.Operation{}
	for i := range r.ops {
		o := &r.ops[i]
		if o.Op != history.OpRelease || o.Status == history.TypeFail {
			continue
		}
		j, ok := r.acquireOf(o)
		if !ok || o.Status != history.TypeOk || o.Call < r.ops[j].Return {
			return lockExit{}, false // an unknown release, or one called before its acquire returned
		}
		released[j] = true
		rels[j] = append(rels[j], o)
	}
	leaseEnd := func(a *history.Operation) int64 {
		if t := r.ttl(a); t > 0 {
			return a.Sent + t
		}
		return history.Never
	}
	var l *history.Operation
	var f1, other, maxRet int64 = -1, -1, -1
	for i := range r.ops {
		a := &r.ops[i]
		if a.Op != history.OpAcquire || a.Status == history.TypeFail {
			continue
		}
		if !a.Ok() {
			if released[i] {
				return lockExit{}, false // an acquire of unknown outcome that the lock check keeps
			}
			continue
		}
		if a.Return >= cut {
			return lockExit{}, false
		}
		f := leaseEnd(a)
		for _, rel := range rels[i] {
			f = min(f, rel.Call)
		}
		if f > f1 {
			if l != nil {
				other = max(other, l.Return)
			}
			f1, l = f, a
		} else {
			other = max(other, a.Return)
		}
		maxRet = max(maxRet, a.Return)
	}
	if l == nil || other >= f1 {
		return lockExit{}, false
	}
	j, _ := r.idx.get(l.ID)
	rs := rels[j]
	if len(rs) != 1 || rs[0].Call <= l.Return || rs[0].Call > leaseEnd(l) || rs[0].Return >= cut {
		return lockExit{}, false
	}
	return lockExit{free: rs[0].Call, leaseEnd: leaseEnd(l), maxRet: maxRet}, true
}

// waitersFit reports whether the acquires carried into r from the previous segment, which ended
// in state from, are waiters the cut allows: each granted (a failed one, or one of unknown outcome
// never released, is not in the lock check), after every acquire of the previous segment in every
// legal order, and not while its last holder held a valid lease.
func (r *run) waitersFit(carried int, from lockExit) bool {
	released := map[int64]bool{}
	for i := range r.ops {
		if o := &r.ops[i]; o.Op == history.OpRelease && o.Status != history.TypeFail {
			released[o.Acq] = true
		}
	}
	for i := range r.ops[:carried] {
		w := &r.ops[i]
		switch {
		case w.Op != history.OpAcquire:
			return false
		case w.Status == history.TypeFail, w.Status == history.TypeInfo && !released[w.ID]:
			continue
		case !w.Ok():
			return false
		}
		end := history.Never
		if t := r.ttl(w); t > 0 {
			end = w.Sent + t
		}
		if from.maxRet >= end || w.Return >= from.leaseEnd {
			return false
		}
	}
	return true
}

// resourceExit returns the counter's value at the end of a segment whose resource operations
// (resourceOps, in call order, at least one) all returned before cut, and whether it is certain:
// the operation that returned last overlapped no other one.
func resourceExit(ops []porcupine.Operation, cut int64) (int64, bool) {
	var maxRet, second int64 = -1, -1
	var last resInput
	var lastCall int64
	for _, o := range ops {
		if o.Return > maxRet {
			second, maxRet = maxRet, o.Return
			last, lastCall = o.Input.(resInput), o.Call
		} else {
			second = max(second, o.Return)
		}
	}
	if maxRet >= cut || lastCall <= second {
		return 0, false
	}
	return endState(last)
}
