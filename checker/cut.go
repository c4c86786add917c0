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
//
// Operations still open (Done == Never: the acquires waiting at the cut) are not the segment's.
func (r *run) lockExit(cut int64) (lockExit, bool) {
	// Per acquire (by index): its non-failed releases, how many, the earliest call, the last one.
	nRel := make([]int32, len(r.ops))
	firstRel := make([]int64, len(r.ops))
	lastRel := make([]int32, len(r.ops))
	unknownRel := map[int]bool{} // acquires with a release of unknown outcome
	for i := range r.ops {
		o := &r.ops[i]
		if o.Op != history.OpRelease || o.Status == history.TypeFail || o.Done == history.Never {
			continue
		}
		j, ok := r.acquireOf(o)
		if !ok || o.Call < r.ops[j].Return {
			return lockExit{}, false // a release called before its acquire returned
		}
		if o.Status != history.TypeOk {
			// An unknown release may take effect at any time after its call, or never: the
			// acquire is taken to hold until its lease ends, which is certain only with a TTL.
			if r.ttl(&r.ops[j]) == 0 {
				return lockExit{}, false
			}
			unknownRel[j] = true
			continue
		}
		if nRel[j] == 0 || o.Call < firstRel[j] {
			firstRel[j] = o.Call
		}
		nRel[j]++
		lastRel[j] = int32(i)
	}
	leaseEnd := func(a *history.Operation) int64 {
		if t := r.ttl(a); t > 0 {
			return a.Sent + t
		}
		return history.Never
	}
	l := -1
	var f1, other, maxRet int64 = -1, -1, -1
	for i := range r.ops {
		a := &r.ops[i]
		if a.Op != history.OpAcquire || a.Status == history.TypeFail || a.Done == history.Never {
			continue
		}
		if !a.Ok() {
			if nRel[i] > 0 {
				return lockExit{}, false // an acquire of unknown outcome that the lock check keeps
			}
			continue
		}
		if a.Return >= cut {
			return lockExit{}, false
		}
		f := leaseEnd(a)
		if nRel[i] > 0 && !unknownRel[i] {
			f = min(f, firstRel[i])
		}
		if f > f1 {
			if l >= 0 {
				other = max(other, r.ops[l].Return)
			}
			f1, l = f, i
		} else {
			other = max(other, a.Return)
		}
		maxRet = max(maxRet, a.Return)
	}
	if l < 0 || other >= f1 || nRel[l] != 1 || unknownRel[l] {
		return lockExit{}, false
	}
	L, R := &r.ops[l], &r.ops[lastRel[l]]
	if R.Call <= L.Return || R.Call > leaseEnd(L) || R.Return >= cut {
		return lockExit{}, false
	}
	return lockExit{free: R.Call, leaseEnd: leaseEnd(L), maxRet: maxRet}, true
}

// cuttable is the checker's word on a cut that history.ReadSegments proposes at t: only where
// the lock's state is certain, and the acquires waiting there (still open in ops) are likely to
// fit it (waitersFit, which the next segment checks once they are answered): invoked less than a
// lease before, with half a lease left to be granted before the last holder's could end.
func cuttable(opts Options) func(*history.Meta, []history.Operation, int64) bool {
	return func(meta *history.Meta, ops []history.Operation, t int64) bool {
		r := &run{meta: *meta, opts: opts.withDefaults(*meta), ops: ops, idx: newOpIndex(ops)}
		ex, ok := r.lockExit(t)
		if !ok {
			return false
		}
		ttl := r.ttl(&history.Operation{})
		if ttl == 0 {
			return true
		}
		if ex.leaseEnd-t < ttl/2 {
			return false
		}
		for i := range ops {
			if w := &ops[i]; w.Done == history.Never && ex.maxRet >= w.Call+ttl {
				return false
			}
		}
		return true
	}
}

// waitersFit reports whether the acquires carried into r from the previous segment, which ended
// in state from, are waiters the cut allows: each granted (a failed one, or one of unknown outcome
// never released, is not in the lock check), after every acquire of the previous segment in every
// legal order, and not while its last holder held a valid lease.
func (r *run) waitersFit(carried int, from lockExit) bool {
	released := func(acq int64) bool {
		for i := carried; i < len(r.ops); i++ {
			if o := &r.ops[i]; o.Op == history.OpRelease && o.Status != history.TypeFail && o.Acq == acq {
				return true
			}
		}
		return false
	}
	for i := range r.ops[:carried] {
		w := &r.ops[i]
		switch {
		case w.Op != history.OpAcquire:
			return false
		case w.Status == history.TypeFail:
			continue
		case w.Status == history.TypeInfo:
			if released(w.ID) {
				return false
			}
			continue
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
