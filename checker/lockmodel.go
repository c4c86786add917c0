package checker

import (
	"fmt"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// The lease-aware lock model (DESIGN.md §6.2).
//
// Porcupine's Step sees only a state, an input and an output, never the times at which porcupine
// placed the operation. So each operation carries its own times in its input, and the state
// carries time bounds:
//
//   - held: the holder (its acquisition id) and expires, the earliest moment its lease can have
//     ended. The lease began when the server granted it, which is no earlier than the acquire's
//     call and no earlier than the moment the lock became free; a lease of TTL lasts at least
//     TTL·(1−drift) from there. A lease with no TTL never expires (expires = Never).
//   - free: since, the earliest moment the lock can have become free.
//
// A grant to B is legal when the lock is free, or when the holder's lease can have expired before
// B's acquire returned (B.return ≥ expires): the grant happened at some moment up to B's return.
// Using bounds that are never later than the truth means a grant is judged illegal only when it
// is illegal in every timing the history allows: the check has no false positives, at the price
// of missing grants that were illegal only in the real (unknown) timing.
//
// Releases. Only the holder's release frees the lock. A release by an acquisition that no longer
// holds it (its lease expired and someone else was granted) is a no-op — that is the contract a
// correct lock service keeps, and the one the lock is checked against. An algorithm whose release
// is a plain DEL breaks that contract in reality: the late DEL removes the next holder's key, and
// the grant to a third client while that holder's lease is still valid is then illegal — the
// slow-release "Us" cells of DESIGN.md §7. (Letting a non-holder's release free the lock would
// make those grants legal and hide the service bug behind a client-class overlap.)
//
// Unknown outcomes (info, or no completion) return at infinity and are nondeterministic: the
// operation may have taken effect or not. Failed acquires and failed releases ("fail", e.g.
// ErrNotHeld for a release of an expired lease) definitely did not take effect: they are legal in
// every state and change nothing, so they are left out of the porcupine history altogether, which
// keeps its search small without changing its answer.

type lockKind uint8

const (
	lockAcquire lockKind = iota
	lockRelease
)

// lockInput is one operation of the lock model, with the times Step needs.
type lockInput struct {
	kind    lockKind
	acq     int64 // the acquisition: an acquire's own id, a release's acq
	call    int64
	ret     int64 // history.Never for an unknown outcome
	ttl     int64 // acquire: lease length after drift, 0 = never expires
	unknown bool
	part    int // porcupine partition (one per lock name)
	client  int
}

// lockState is one state of the model; it is compared with ==.
type lockState struct {
	holder int64 // acquisition id, 0 = free
	t      int64 // held: earliest expiry (Never = no TTL); free: earliest moment it became free
}

func lockStep(state, input, _ any) []any {
	s, in := state.(lockState), input.(lockInput)
	switch in.kind {
	case lockAcquire:
		var out []any
		if in.unknown {
			out = append(out, s) // it may not have taken effect
		}
		if s.holder == 0 || (s.t != history.Never && in.ret >= s.t) {
			start := max(in.call, s.t)
			exp := history.Never
			if in.ttl > 0 {
				exp = start + in.ttl
			}
			out = append(out, lockState{holder: in.acq, t: exp})
		}
		return out
	case lockRelease:
		if s.holder != in.acq || in.acq == 0 {
			return []any{s} // not the holder: a correct service ignores it
		}
		// The lock is free from the release's effect, or from the lease's expiry if that came
		// first.
		free := lockState{t: min(in.call, s.t)}
		if in.unknown {
			return []any{s, free}
		}
		return []any{free}
	}
	return nil
}

func lockHash(state any) uint64 {
	s := state.(lockState)
	return uint64(s.holder)*0x9e3779b97f4a7c15 ^ uint64(s.t)*0xbf58476d1ce4e5b9
}

func lockModel(parts int) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionBy(parts, func(in any) int { return in.(lockInput).part }),
		Init:      func() []any { return []any{lockState{}} },
		Step:      lockStep,
		Hash:      lockHash,
		DescribeOperation: func(input, output any) string {
			in := input.(lockInput)
			what := "acquire"
			if in.kind == lockRelease {
				what = "release"
			}
			return fmt.Sprintf("%s(acq %d) → %v", what, in.acq, output)
		},
		DescribeState: func(state any) string {
			s := state.(lockState)
			switch {
			case s.holder == 0:
				return "free"
			case s.t == history.Never:
				return fmt.Sprintf("held by acq %d", s.holder)
			default:
				return fmt.Sprintf("held by acq %d until ≥%.3fms", s.holder, ms(s.t))
			}
		},
	}
	return nm.ToModel()
}

// partitionBy returns a porcupine Partition function grouping operations by an index carried in
// their input.
func partitionBy(n int, part func(any) int) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(h []porcupine.Operation) [][]porcupine.Operation {
		out := make([][]porcupine.Operation, n)
		for _, o := range h {
			p := part(o.Input)
			out[p] = append(out[p], o)
		}
		return out
	}
}

// lockHistory builds the porcupine history of the lock service: one partition per lock name.
func (r *run) lockHistory() ([]porcupine.Operation, int) {
	parts := map[string]int{}
	var h []porcupine.Operation
	for i := range r.ops {
		o := &r.ops[i]
		if o.Status == history.TypeFail {
			continue
		}
		in := lockInput{call: o.Call, ret: o.Return, unknown: o.Status != history.TypeOk, client: o.Client}
		lock := o.Lock
		switch o.Op {
		case history.OpAcquire:
			in.kind, in.acq, in.ttl = lockAcquire, o.ID, r.ttl(o)
		case history.OpRelease:
			j, ok := r.acquireOf(o)
			if !ok {
				continue
			}
			// A release belongs to its acquisition's lock, whatever its own line says.
			in.kind, in.acq, lock = lockRelease, o.Acq, r.ops[j].Lock
		default:
			continue
		}
		p, ok := parts[lock]
		if !ok {
			p = len(parts)
			parts[lock] = p
		}
		in.part = p
		h = append(h, porcupine.Operation{
			ClientId: max(o.Client-1, 0), Input: in, Call: o.Call,
			Output: string(o.Status), Return: o.Return, Metadata: o.ID,
		})
	}
	return h, len(parts)
}
