package checker

import (
	"cmp"
	"fmt"
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
	r.lockOps = h
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
func (r *run) porcupineGrantViolation(lin *Linearization) Violation {
	v := Violation{Kind: "service", Class: ServiceClass, AtMs: ms(r.end),
		Explanation: "porcupine found no order of the acquires and releases in which every grant was legal: the lock service granted a lock that was still validly held"}
	if r.opts.SkipVisualization || lin == nil {
		m := lockModel(1)
		_, info := porcupine.CheckOperationsVerbose(m, r.lockOps, r.opts.Timeout)
		lin = &Linearization{Model: m, Info: info}
	}
	var best []porcupine.Operation
	for _, part := range lin.Info.PartialLinearizationsOperations() {
		for _, seq := range part {
			if len(best) == 0 || len(seq) > len(best) && len(seq) < r.partSize(seq) {
				if len(seq) < r.partSize(seq) {
					best = seq
				}
			}
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
		if ok && !in[id] && r.ops[j].Op == history.OpAcquire && r.ops[j].Ok() && (len(best) == 0 || o.Input.(lockInput).part == best[0].Input.(lockInput).part) {
			cands = append(cands, &r.ops[j])
		}
	}
	if len(cands) == 0 {
		return v
	}
	b := slices.MinFunc(cands, func(x, y *history.Operation) int { return cmp.Compare(x.Return, y.Return) })
	v.B, v.AtMs = ref(b), ms(b.Return)
	if a != nil {
		v.A = ref(a)
		v.Explanation = fmt.Sprintf("porcupine found no legal order: after acq %d of client %d, the grant of acq %d to client %d at %.3fms cannot be explained by a release or an expired lease",
			a.ID, a.Client, b.ID, b.Client, ms(b.Return))
	}
	return v
}

// partSize is the number of lock operations in the partition of seq.
func (r *run) partSize(seq []porcupine.Operation) int {
	if len(seq) == 0 {
		return 0
	}
	p, n := seq[0].Input.(lockInput).part, 0
	for _, o := range r.lockOps {
		if o.Input.(lockInput).part == p {
			n++
		}
	}
	return n
}
