package checker

import (
	"cmp"
	"fmt"
	"slices"

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
// operation may have taken effect or not. (lockHistory leaves out or caps those whose placement
// cannot change the answer, which is what keeps the search small on runs with many of them.) Failed acquires and failed releases ("fail", e.g.
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
//
// Operations with an unknown outcome return at infinity, so each stays concurrent with every later
// operation and porcupine tries it, with and without its effect, at every point of the rest of the
// history: a few of them make the search explode (a slow-release run of setnx-expire, with eight
// timed-out SETNXs early on, ran out of the 10s timeout where the answer is Illegal). Two
// reductions remove that cost without changing the answer, i.e. the history is linearizable in
// the model after the reduction exactly when it was before:
//
//   - An unknown acquire U that no (ok or unknown) release refers to is left out. Its effect can
//     only make later grants harder: let S be the state where U is linearized with its effect
//     and S' = held(U, e') the state it leaves (e' ≥ S's time bound, U being legal there only if
//     S's lease can have ended). From S and S' the rest of the history runs in lock step with S
//     "no more constrained" than S': same holder or U holding in S' (U is never released, so its
//     holding never enables anything), and a time bound no later. Every acquire legal from S' is
//     legal from S and leads to the same holder with a bound no later; releases keep the
//     relation (a release of S's holder frees S, and S' is then either freed too, same holder,
//     or still held by U). So whenever a linearization with U's effect is legal, the same one
//     with U taking no effect — which its unknown outcome allows anywhere — is legal too; and
//     leaving U out is exactly "U takes no effect".
//   - An unknown release R of acquisition A is capped: its return is set to T, the earliest
//     return of an ok acquire B of another acquisition on the same lock that was called after A
//     returned (so B is linearized after A in every order). Any operation called after T is then
//     linearized after B; had R been linearized after it, R came after B took over from A, so A
//     was no longer the holder and R was a no-op (only the holder's release frees the lock, and
//     A can never hold it again). A no-op unknown release can equally be placed anywhere its real
//     time allows, in particular before T. If R was invoked after T it is a no-op in every order
//     and is left out. An unknown release of an acquisition that itself returned at infinity is
//     not capped. This is the "A could no longer be the holder" cap; a cap by A's lease expiry
//     alone would not be sound in this model, because a release frees the lock from min(its
//     call, the lease's earliest end), which can be earlier than the expiry bound a later
//     grant would otherwise have to wait for.
//
// With TTL 0 nothing here depends on leases, so the reductions hold unchanged (there is no cap by
// expiry to get wrong). Failed operations were never in the history (see the top of this file).
func (r *run) lockHistory() ([]porcupine.Operation, int) { return r.lockHistoryOf(true) }

// lockHistoryOf builds the lock history with or without the reductions (without: for the tests
// that check the reductions change no answer).
func (r *run) lockHistoryOf(reduce bool) ([]porcupine.Operation, int) {
	// Acquisitions some ok or unknown release refers to; and, per lock, the ok acquires in call
	// order with the suffix minimum of their returns (for the release cap).
	released := map[int]bool{}
	type okAcq struct {
		call, minRet int64
		i            int
	}
	oks := map[string][]okAcq{}
	for i := range r.ops {
		o := &r.ops[i]
		switch {
		case o.Op == history.OpRelease && o.Status != history.TypeFail:
			if j, ok := r.acquireOf(o); ok {
				released[j] = true
			}
		case o.Op == history.OpAcquire && o.Status == history.TypeOk:
			oks[o.Lock] = append(oks[o.Lock], okAcq{call: o.Call, i: i})
		}
	}
	for _, l := range oks {
		slices.SortFunc(l, func(x, y okAcq) int { return cmp.Compare(x.call, y.call) })
		m := history.Never
		for k := len(l) - 1; k >= 0; k-- {
			m = min(m, r.ops[l[k].i].Return)
			l[k].minRet = m
		}
	}
	// releaseCap is T for an unknown release of the acquire at index j (Never: no cap).
	releaseCap := func(j int) int64 {
		a := &r.ops[j]
		if a.Return == history.Never {
			return history.Never
		}
		l := oks[a.Lock]
		k, _ := slices.BinarySearchFunc(l, a.Return+1, func(x okAcq, t int64) int { return cmp.Compare(x.call, t) })
		if k == len(l) {
			return history.Never
		}
		return l[k].minRet // a itself was called before its return, so it is not among them
	}

	parts := map[string]int{}
	var h []porcupine.Operation
	for i := range r.ops {
		o := &r.ops[i]
		if o.Status == history.TypeFail {
			continue
		}
		unknown := o.Status != history.TypeOk
		in := lockInput{call: o.Call, ret: o.Return, unknown: unknown, client: o.Client}
		ret := o.Return
		lock := o.Lock
		switch o.Op {
		case history.OpAcquire:
			if reduce && unknown && !released[i] {
				continue
			}
			in.kind, in.acq, in.ttl = lockAcquire, o.ID, r.ttl(o)
		case history.OpRelease:
			j, ok := r.acquireOf(o)
			if !ok {
				continue
			}
			if reduce && unknown {
				t := releaseCap(j)
				if t < o.Call {
					continue
				}
				ret = min(ret, t)
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
			Output: string(o.Status), Return: ret, Metadata: o.ID,
		})
	}
	return h, len(parts)
}
