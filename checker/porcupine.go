package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// linearize runs one porcupine check with the configured timeout.
func (r *run) linearize(m porcupine.Model, h []porcupine.Operation, verbose bool) (Check, *Linearization) {
	began := time.Now()
	var res porcupine.CheckResult
	lin := &Linearization{Model: m}
	if verbose {
		res, lin.Info = porcupine.CheckOperationsVerbose(m, h, r.opts.Timeout)
	} else {
		res = porcupine.CheckOperationsTimeout(m, h, r.opts.Timeout)
	}
	return Check{Result: string(res), Ms: ms(int64(time.Since(began)))}, lin
}

// checkLock runs the lease-aware lock check.
func (r *run) checkLock() (Check, *Linearization) {
	h, parts := r.lockHistory()
	r.lockOps, r.lockParts = h, parts
	return r.linearize(lockModel(parts), h, !r.opts.SkipVisualization)
}

// checkResource runs the resource check on segments of the critical sections.
func (r *run) checkResource(ops []porcupine.Operation) (Check, *Linearization) {
	h, parts := segment(ops)
	return r.linearize(resourceModel(parts), h, !r.opts.SkipVisualization)
}

// porcupineGrantViolation locates an illegal grant porcupine proved but the direct sweep could not
// pin on a pair: the earliest successful acquire left out of the longest legal prefix, against the
// last acquire in that prefix.
//
// A lock's history is checked in chunks (lockChunks); its longest legal prefix is the complete
// linearizations of its chunks before the first one that has none, followed by the longest
// partial linearization of that chunk — what porcupine would have found on the lock's history in
// one piece. Of several locks, the one with the longest such prefix is taken.
func (r *run) porcupineGrantViolation(lin *Linearization) Violation {
	v := Violation{Kind: "service", Class: ServiceClass, AtMs: ms(r.end),
		Explanation: "porcupine found no order of the acquires and releases in which every grant was legal: the lock service granted a lock that was still validly held"}
	if r.opts.SkipVisualization || lin == nil {
		m := lockModel(r.lockParts)
		_, info := porcupine.CheckOperationsVerbose(m, r.lockOps, r.opts.Timeout)
		lin = &Linearization{Model: m, Info: info}
	}
	byPart := make([][]porcupine.Operation, r.lockParts)
	lockOf := make([]int, r.lockParts)
	for _, o := range r.lockOps {
		in := o.Input.(lockInput)
		byPart[in.part] = append(byPart[in.part], o)
		lockOf[in.part] = in.lock
	}
	// The longest partial linearization of each partition. Porcupine hands them over in map order,
	// so ties go to the one that leaves out the earliest-returning acquire (then the lowest id,
	// then the lowest sequence of ids): a location that does not change from one check of the
	// same history to the next.
	type key struct {
		ret, id int64
		ids     []int64
	}
	keyOf := func(p int, seq []porcupine.Operation) key {
		k := key{ret: history.Never, id: math.MaxInt64}
		in := make(map[int64]bool, len(seq))
		for _, o := range seq {
			id := o.Metadata.(int64)
			in[id] = true
			k.ids = append(k.ids, id)
		}
		for _, o := range byPart[p] {
			x := o.Input.(lockInput)
			if x.kind == lockAcquire && !x.unknown && !in[x.acq] && (o.Return < k.ret || o.Return == k.ret && x.acq < k.id) {
				k.ret, k.id = o.Return, x.acq
			}
		}
		return k
	}
	less := func(x, y key) bool {
		if x.ret != y.ret {
			return x.ret < y.ret
		}
		if x.id != y.id {
			return x.id < y.id
		}
		return slices.Compare(x.ids, y.ids) < 0
	}
	longest := make([][]porcupine.Operation, r.lockParts)
	for p, part := range lin.Info.PartialLinearizationsOperations() {
		var best key
		for _, seq := range part {
			switch {
			case longest[p] == nil || len(seq) > len(longest[p]):
				longest[p] = seq
				if len(seq) < len(byPart[p]) {
					best = keyOf(p, seq)
				}
			case len(seq) == len(longest[p]) && len(seq) < len(byPart[p]):
				if k := keyOf(p, seq); less(k, best) {
					longest[p], best = seq, k
				}
			}
		}
	}
	prefix := map[int][]porcupine.Operation{} // lock → its longest legal prefix, for locks with none complete
	done := map[int]bool{}                    // locks whose first chunk without a complete linearization was seen
	for p := range longest {                  // partitions of a lock are numbered in time order
		l := lockOf[p]
		if done[l] {
			continue
		}
		prefix[l] = append(prefix[l], longest[p]...)
		if len(longest[p]) < len(byPart[p]) {
			done[l] = true
		}
	}
	bestLock, found := -1, false
	var best []porcupine.Operation
	for l := range done {
		if !found || len(prefix[l]) > len(best) || len(prefix[l]) == len(best) && l < bestLock {
			bestLock, best, found = l, prefix[l], true
		}
	}
	in := map[int64]bool{}
	var a *history.Operation
	for _, o := range best {
		id := o.Metadata.(int64)
		in[id] = true
		if j, ok := r.idx.get(id); ok && r.ops[j].Op == history.OpAcquire {
			a = &r.ops[j]
		}
	}
	var cands []*history.Operation
	for _, o := range r.lockOps {
		id := o.Metadata.(int64)
		j, ok := r.idx.get(id)
		if ok && !in[id] && r.ops[j].Op == history.OpAcquire && r.ops[j].Ok() && (!found || o.Input.(lockInput).lock == bestLock) {
			cands = append(cands, &r.ops[j])
		}
	}
	if len(cands) == 0 {
		return v
	}
	b := slices.MinFunc(cands, func(x, y *history.Operation) int {
		return cmp.Or(cmp.Compare(x.Return, y.Return), cmp.Compare(x.ID, y.ID))
	})
	v.B, v.AtMs = ref(b), ms(b.Return)
	if a != nil {
		v.A = ref(a)
		v.Explanation = fmt.Sprintf("porcupine found no legal order: after acq %d of client %d, the grant of acq %d to client %d at %.3fms cannot be explained by a release or an expired lease",
			a.ID, a.Client, b.ID, b.Client, ms(b.Return))
	}
	return v
}
