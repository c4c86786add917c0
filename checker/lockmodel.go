package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// The lease-aware lock model (docs/design.md#checks).
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
// slow-release "Us" cells of docs/design.md#catalogue-and-expectations. (Letting a non-holder's release free the lock would
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
	lockInit // the state at a cut between chunks (lockChunks): free since call
)

// lockInput is one operation of the lock model, with the times Step needs.
type lockInput struct {
	kind    lockKind
	acq     int64 // the acquisition: an acquire's own id, a release's acq
	call    int64
	ret     int64 // history.Never for an unknown outcome
	ttl     int64 // acquire: lease length after drift, 0 = never expires
	unknown bool
	lock    int // index of the lock name
	part    int // porcupine partition: a chunk of one lock's history (see lockChunks)
	client  int
}

// lockState is one state of the model; it is compared with ==.
type lockState struct {
	holder int64 // acquisition id, 0 = free
	t      int64 // held: earliest expiry (Never = no TTL); free: earliest moment it became free
}

// lockNext appends to out the states the model can be in after in from s.
func lockNext(out []lockState, s lockState, in lockInput) []lockState {
	switch in.kind {
	case lockAcquire:
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
	case lockRelease:
		if s.holder != in.acq || in.acq == 0 {
			return append(out, s) // not the holder: a correct service ignores it
		}
		// The lock is free from the release's effect, or from the lease's expiry if that came
		// first.
		free := lockState{t: min(in.call, s.t)}
		if in.unknown {
			return append(out, s, free)
		}
		out = append(out, free)
	case lockInit:
		out = append(out, lockState{t: in.call})
	}
	return out
}

func lockHash(s lockState) uint64 {
	return uint64(s.holder)*0x9e3779b97f4a7c15 ^ uint64(s.t)*0xbf58476d1ce4e5b9
}

// lockStates is the set of states the model may be in (unknown outcomes make it
// nondeterministic), in the order they were reached: what porcupine's NondeterministicModel.ToModel
// makes of a model with several next states, without boxing each state.
type lockStates []lockState

// lockModel is the lock model for porcupine, its history in parts partitions.
func lockModel(parts int) porcupine.Model {
	return porcupine.Model{
		Partition: partitionBy(parts, func(in any) int { return in.(lockInput).part }),
		Init:      func() any { return lockStates{{}} },
		Step: func(state, input, _ any) (bool, any) {
			in := input.(lockInput)
			var next lockStates
			for _, s := range state.(lockStates) {
				var buf [2]lockState
				for _, n := range lockNext(buf[:0], s, in) {
					if !slices.Contains(next, n) {
						next = append(next, n)
					}
				}
			}
			return len(next) > 0, next
		},
		Equal: func(a, b any) bool {
			x, y := a.(lockStates), b.(lockStates)
			if len(x) != len(y) {
				return false
			}
			for _, s := range x {
				if !slices.Contains(y, s) {
					return false
				}
			}
			return true
		},
		Hash: func(state any) uint64 {
			var h uint64
			for _, s := range state.(lockStates) {
				h ^= lockHash(s) // a set: the order does not count
			}
			return h
		},
		DescribeOperation: func(input, output any) string {
			in := input.(lockInput)
			what := "acquire"
			switch in.kind {
			case lockRelease:
				what = "release"
			case lockInit:
				return fmt.Sprintf("free since %.3fms (state where the history was cut)", ms(in.call))
			}
			return fmt.Sprintf("%s(acq %d) → %v", what, in.acq, output)
		},
		DescribeState: func(state any) string {
			var d []string
			for _, s := range state.(lockStates) {
				switch {
				case s.holder == 0:
					d = append(d, "free")
				case s.t == history.Never:
					d = append(d, fmt.Sprintf("held by acq %d", s.holder))
				default:
					d = append(d, fmt.Sprintf("held by acq %d until ≥%.3fms", s.holder, ms(s.t)))
				}
			}
			return "{" + strings.Join(d, ", ") + "}"
		},
	}
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
func (r *run) lockHistory() ([]porcupine.Operation, int) { return r.lockHistoryOf(true, minSegment) }

// lockHistoryOf builds the lock history with or without the reductions, and cut into chunks of
// at least minChunk operations where lockChunks allows (0: one partition per lock). The tests
// check with it that neither changes porcupine's answer.
func (r *run) lockHistoryOf(reduce bool, minChunk int) ([]porcupine.Operation, int) {
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
			oks[o.Lock] = append(oks[o.Lock], okAcq{call: o.Sent, i: i})
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

	locks := map[string]int{}
	var byLock [][]porcupine.Operation
	for i := range r.ops {
		o := &r.ops[i]
		if o.Status == history.TypeFail {
			continue
		}
		unknown := o.Status != history.TypeOk
		// An acquire took effect after its winning attempt was sent (Sent; Call when unknown):
		// earlier retries of the loop did not take the lock.
		call := o.Call
		if o.Op == history.OpAcquire {
			call = o.Sent
		}
		in := lockInput{call: call, ret: o.Return, unknown: unknown, client: o.Client}
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
		l, ok := locks[lock]
		if !ok {
			l = len(locks)
			locks[lock] = l
			var ops []porcupine.Operation
			if l == 0 {
				// Most histories have one lock: its operations are about half of all.
				ops = make([]porcupine.Operation, 0, len(r.ops)/2+2)
				if r.lockFrom != nil {
					ops = append(ops, porcupine.Operation{}) // room for the state at the cut
				}
			}
			byLock = append(byLock, ops)
		}
		in.lock = l
		byLock[l] = append(byLock[l], porcupine.Operation{
			ClientId: max(o.Client-1, 0), Input: in, Call: call,
			Output: statusOutput(o.Status), Return: ret, Metadata: o.ID,
		})
	}
	if r.lockFrom != nil && len(byLock) > 0 {
		// A segment of a long history: it starts in the state the previous one ended in (the
		// checker only cuts histories of one lock).
		ops := byLock[0][1:]
		first := ops[0].Call
		for _, o := range ops {
			first = min(first, o.Call)
		}
		t := r.lockFrom.free
		byLock[0][0] = porcupine.Operation{ClientId: 0, Input: lockInput{kind: lockInit, call: t, ret: t},
			Call: first - 1, Output: "ok", Return: first - 1, Metadata: int64(0)}
	}
	var chunks [][]porcupine.Operation
	n := 0
	for _, ops := range byLock {
		minSize := minChunk
		if minSize <= 0 {
			minSize = len(ops) + 1 // one partition per lock
		}
		for _, chunk := range lockChunks(ops, minSize) {
			chunks = append(chunks, chunk)
			n += len(chunk)
		}
	}
	h := make([]porcupine.Operation, 0, n)
	parts := 0
	for _, chunk := range chunks {
		for _, o := range chunk {
			in := o.Input.(lockInput)
			in.part = parts
			o.Input = in
			h = append(h, o)
		}
		parts++
	}
	return h, parts
}

// statusOutput is a completion type as porcupine's output, boxed once.
func statusOutput(t history.Type) any {
	switch t {
	case history.TypeOk:
		return outOk
	case history.TypeInfo:
		return outInfo
	}
	return string(t)
}

var outOk, outInfo any = string(history.TypeOk), string(history.TypeInfo)
