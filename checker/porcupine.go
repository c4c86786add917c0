package checker

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// visualizeMax is the most operations porcupine's visualization of one check covers. A longer
// history is checked in batches without it, and visualized around its first violation (or from
// its start) afterwards, by visualize: the verbose check keeps every partial linearization and
// its page would be too large to open.
const visualizeMax = 20_000

// batchOps is about how many operations one porcupine call checks on a long history: porcupine
// runs every partition it is given at once, so handing it all of a long history holds all of
// their search state together (1 GB for a million operations); batches bound that, and each
// batch's partitions still run in parallel.
const batchOps = 50_000

// linearize runs one porcupine check of h (its partitions contiguous, numbered by partOf) with
// the configured timeout. The info for the visualization comes with it when asked for and h is
// short; a long h is checked in batches and gets its info from visualize.
func (r *run) linearize(m porcupine.Model, h []porcupine.Operation, partOf func(any) int, verbose bool) (Check, *Linearization) {
	began := time.Now()
	lin := &Linearization{Model: m, ops: h, partOf: partOf}
	var res porcupine.CheckResult
	switch {
	case verbose && len(h) <= visualizeMax:
		res, lin.Info = porcupine.CheckOperationsVerbose(m, h, r.opts.Timeout)
	default:
		// Each batch gets the whole timeout: it bounds a search that explodes, which happens
		// within a partition, not the time a long history takes (that grows with its length).
		res = porcupine.Ok
		for lo := 0; lo < len(h) && res == porcupine.Ok; {
			hi := min(lo+batchOps, len(h))
			for hi < len(h) && partOf(h[hi].Input) == partOf(h[hi-1].Input) {
				hi++ // a batch ends at a partition's end
			}
			res = porcupine.CheckOperationsTimeout(m, h[lo:hi], r.opts.Timeout)
			lo = hi
		}
	}
	return Check{Result: string(res), Ms: ms(int64(time.Since(began)))}, lin
}

// visualize gives a long check (one linearize did not visualize) its info: porcupine's verbose
// check of the partitions around at (ns; the first violation's time, or 0 for the start), up to
// visualizeMax operations. Check.Visualized says which.
func (r *run) visualize(lin *Linearization, c *Check, at int64) {
	if lin == nil || len(lin.ops) <= visualizeMax || !reflect.ValueOf(lin.Info).IsZero() {
		return
	}
	h := lin.ops
	// The partition containing at: the last one that starts (in call order) no later than at.
	start := 0
	for i := range h {
		if i > 0 && lin.partOf(h[i].Input) != lin.partOf(h[i-1].Input) {
			if h[i].Call > at {
				break
			}
			start = i
		}
	}
	// Whole partitions around it: backwards to centre it, then forwards while they fit.
	lo, hi := start, start
	for hi < len(h) && lin.partOf(h[hi].Input) == lin.partOf(h[start].Input) {
		hi++
	}
	for lo > 0 && hi-lo < visualizeMax/2 {
		k := lo - 1
		for k > 0 && lin.partOf(h[k-1].Input) == lin.partOf(h[lo-1].Input) {
			k--
		}
		if hi-k > visualizeMax {
			break
		}
		lo = k
	}
	for hi < len(h) {
		k := hi + 1
		for k < len(h) && lin.partOf(h[k].Input) == lin.partOf(h[hi].Input) {
			k++
		}
		if k-lo > visualizeMax {
			break
		}
		hi = k
	}
	_, lin.Info = porcupine.CheckOperationsVerbose(lin.Model, h[lo:hi], r.opts.Timeout)
	lin.window, lin.span = [2]int{lo, hi}, [2]int64{h[lo].Call, h[hi-1].Call}
	where := "from the start"
	if at > 0 {
		where = fmt.Sprintf("around %s", history.FormatNs(at))
	}
	c.Visualized = fmt.Sprintf("the check's operations %d–%d of %d (%s to %s, %s)", lo+1, hi, len(h), history.FormatNs(h[lo].Call), history.FormatNs(h[hi-1].Call), where)
}

// checkLock runs the lease-aware lock check.
func (r *run) checkLock() (Check, *Linearization) {
	h, parts := r.lockHistory()
	r.lockOps, r.lockParts = h, parts
	return r.linearize(lockModel(parts), h, func(in any) int { return in.(lockInput).part }, !r.opts.SkipVisualization)
}

// checkResource runs the resource check on segments of the critical sections.
func (r *run) checkResource(ops []porcupine.Operation) (Check, *Linearization) {
	h, parts := segment(ops)
	return r.linearize(resourceModel(parts), h, func(in any) int { return in.(resInput).part }, !r.opts.SkipVisualization)
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
	if r.opts.SkipVisualization || lin == nil || reflect.ValueOf(lin.Info).IsZero() || len(r.lockOps) > visualizeMax {
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
