package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// The resource model (docs/design.md#checks): the harness's counter is a register, and each critical
// section is one operation on it — "increment": read v, then write w (= v+1), as one atomic step.
// If two critical sections interleave (both read 5, both write 6) no order of atomic increments
// explains the history: porcupine says Illegal, and that is a lost update that really happened.
//
// The pieces of a critical section become:
//
//   - read v + write w that took effect: incr(v→w), from the read's call to the write's return;
//   - read v alone (no write, or a write that was rejected, e.g. a stale fence): check(v);
//   - a write with no usable read before it: set(w);
//   - a write with unknown outcome: check(v) for its read, and set(w) returning at infinity that
//     may or may not have taken effect.
//
// Reads and writes that failed or whose read value is unknown constrain nothing and are dropped.

type resKind uint8

const (
	resIncr resKind = iota
	resCheck
	resSet
	resInit // first op of a segment: the state the previous segment is known to end in
)

type resInput struct {
	kind    resKind
	v, w    int64
	unknown bool
	part    int
	acq     int64
	read    int // op index of the read, -1 if none
	write   int // op index of the write, -1 if none
}

// resState is the counter's value; unset is reserved for a segment that has not seen its resInit.
type resState struct {
	v     int64
	unset bool
}

func resStep(state, input, _ any) []any {
	s, in := state.(resState), input.(resInput)
	switch in.kind {
	case resInit:
		return []any{resState{v: in.v}}
	case resIncr:
		if s.unset || s.v != in.v {
			return nil
		}
		return []any{resState{v: in.w}}
	case resCheck:
		if s.unset || s.v != in.v {
			return nil
		}
		return []any{s}
	case resSet:
		if in.unknown {
			return []any{s, resState{v: in.w}}
		}
		return []any{resState{v: in.w}}
	}
	return nil
}

func resourceModel(parts int) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionBy(parts, func(in any) int { return in.(resInput).part }),
		Init:      func() []any { return []any{resState{}} },
		Step:      resStep,
		Hash: func(state any) uint64 {
			s := state.(resState)
			if s.unset {
				return 1
			}
			return uint64(s.v) * 0x9e3779b97f4a7c15
		},
		DescribeOperation: func(input, _ any) string {
			in := input.(resInput)
			switch in.kind {
			case resIncr:
				return fmt.Sprintf("incr %d→%d (acq %d)", in.v, in.w, in.acq)
			case resCheck:
				return fmt.Sprintf("read %d (acq %d)", in.v, in.acq)
			case resSet:
				return fmt.Sprintf("write %d (acq %d)", in.w, in.acq)
			}
			return fmt.Sprintf("start at %d", in.v)
		},
		DescribeState: func(state any) string { return fmt.Sprint(state.(resState).v) },
	}
	return nm.ToModel()
}

// staleRejected reports whether a write was rejected by the resource's fencing check.
func staleRejected(o *history.Operation) bool {
	return o.Op == history.OpWrite && o.Status == history.TypeFail && strings.Contains(o.Error, "stale fence")
}

// resourceOps turns the accesses into model operations, in call order of their first access.
func (r *run) resourceOps() []porcupine.Operation {
	pending := map[int64]int{} // acquisition → index of its unpaired ok read
	h := make([]porcupine.Operation, 0, len(r.ops)/4+1)
	add := func(in resInput, call, ret int64, client int) {
		h = append(h, porcupine.Operation{ClientId: max(client-1, 0), Input: in, Call: call, Return: ret, Output: nil})
	}
	check := func(ri int) {
		o := &r.ops[ri]
		add(resInput{kind: resCheck, v: *o.Value, acq: o.Acq, read: ri, write: -1}, o.Call, o.Return, o.Client)
	}
	for i := range r.ops {
		o := &r.ops[i]
		switch o.Op {
		case history.OpRead:
			if !o.Ok() || o.Value == nil {
				continue
			}
			if prev, ok := pending[o.Acq]; ok {
				check(prev)
			}
			pending[o.Acq] = i
		case history.OpWrite:
			ri, hasRead := pending[o.Acq]
			delete(pending, o.Acq)
			if o.Status == history.TypeFail || o.Value == nil {
				if hasRead {
					check(ri)
				}
				continue
			}
			if o.Ok() && hasRead {
				rd := &r.ops[ri]
				add(resInput{kind: resIncr, v: *rd.Value, w: *o.Value, acq: o.Acq, read: ri, write: i}, rd.Call, o.Return, o.Client)
				continue
			}
			if hasRead {
				check(ri)
			}
			add(resInput{kind: resSet, w: *o.Value, unknown: !o.Ok(), acq: o.Acq, read: -1, write: i}, o.Call, o.Return, o.Client)
		}
	}
	for _, ri := range pending {
		check(ri)
	}
	slices.SortStableFunc(h, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	return h
}

// minSegment is the fewest operations a resource segment holds: porcupine runs one goroutine per
// partition, so a million one-op segments would cost more than they save.
const minSegment = 256

// segment cuts the resource history into partitions porcupine can check independently, which
// turns its search (and its n-bit-per-state memory) from quadratic into linear for the usual,
// nearly sequential history.
//
// A cut goes at a quiet moment, when every operation so far has returned and the next one has not
// been called, and only where the state at that moment is certain: the operation that returned
// last overlapped no other one, so every order ends with it, and its result (the value it wrote,
// or the value it read) is the state. The next segment starts with a resInit op that sets that
// state. Each segment is then linearizable from its start state exactly when the whole history is.
func segment(h []porcupine.Operation) ([]porcupine.Operation, int) {
	out := make([]porcupine.Operation, 0, len(h)+len(h)/minSegment+1)
	part, size := 0, 0
	var maxRet, second int64 = -1, -1
	var last *resInput
	lastCall := int64(0)
	for i := range h {
		o := h[i]
		if size >= minSegment && o.Call > maxRet && last != nil && lastCall > second {
			if v, ok := endState(*last); ok {
				part++
				size = 0
				out = append(out, porcupine.Operation{Input: resInput{kind: resInit, v: v, part: part, read: -1, write: -1},
					Call: maxRet, Return: maxRet})
				maxRet, second = -1, -1
			}
		}
		in := o.Input.(resInput)
		in.part = part
		o.Input = in
		out = append(out, o)
		size++
		if o.Return > maxRet {
			second, maxRet = maxRet, o.Return
			last, lastCall = &in, o.Call
		} else {
			second = max(second, o.Return)
		}
	}
	return out, part + 1
}

// endState is the state after op, when op is the last one linearized.
func endState(in resInput) (int64, bool) {
	switch {
	case in.unknown:
		return 0, false
	case in.kind == resIncr || in.kind == resSet:
		return in.w, true
	case in.kind == resCheck:
		return in.v, true
	}
	return 0, false
}

// lostUpdates counts and locates lost updates.
//
// The count is successful writes minus the counter's final value (docs/design.md#checks): the counter
// starts at 0 and every increment should raise it by one, so each successful write that did not
// is an update that was lost. The final value is the value of the last successful write by return
// time (the resource lives in the harness, whose clock orders its writes). Writes the resource
// rejected (stale fence) and writes with unknown outcome are not successful writes.
//
// The first lost update is the first successful increment (in return order) that overwrote a
// value other than the one it read: another write landed between its read and its write. It
// locates the violation for the report; whether a lost update is proven is porcupine's call.
func (r *run) lostUpdates(res []porcupine.Operation) (count int, first *Violation) {
	c, first := r.lostFrom(res, lostCarry{})
	return c.count(), first
}

// lostCarry is lostUpdates' state at the end of a segment: the successful writes so far, the
// counter's value after the last of them, and whether there was one.
type lostCarry struct {
	writes  int
	cur     int64
	written bool
	// lost is set when an increment overwrote a value other than the one it read, at lostAt (its
	// return).
	lost   bool
	lostAt int64
}

func (c lostCarry) count() int { return max(c.writes-int(c.cur), 0) }

// lostFrom is lostUpdates on a segment of the history, from the previous segment's state. An
// update lost across the cut (against the carried write) sets lost without a violation.
func (r *run) lostFrom(res []porcupine.Operation, c lostCarry) (lostCarry, *Violation) {
	var first *Violation
	writes := make([]porcupine.Operation, 0, len(res)/2+1)
	for _, o := range res {
		in := o.Input.(resInput)
		if (in.kind == resIncr || in.kind == resSet) && !in.unknown {
			writes = append(writes, o)
		}
	}
	slices.SortStableFunc(writes, func(a, b porcupine.Operation) int { return cmp.Compare(a.Return, b.Return) })
	lastW := -1
	for _, o := range writes {
		in := o.Input.(resInput)
		if in.kind == resIncr && in.v != c.cur && !c.lost && c.written {
			c.lost, c.lostAt = true, r.ops[in.write].Return
			if lastW >= 0 {
				a, b := &r.ops[lastW], &r.ops[in.write]
				first = &Violation{
					Kind: "lost-update", AtMs: ms(b.Return), A: ref(a), B: ref(b),
					Explanation: fmt.Sprintf("client %d read %d and wrote %d, but client %d had written %d in between: an update was lost",
						b.Client, in.v, in.w, a.Client, c.cur),
				}
			}
		}
		c.cur, lastW, c.written = in.w, in.write, true
	}
	c.writes += len(writes)
	return c, first
}
