package checker

import (
	"cmp"
	"slices"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// lockChunks cuts the history of one lock into chunks porcupine can check independently, each of
// at least minSize operations (but the last): like the resource check's segments, this turns the
// search's n-bit-per-cached-state memory and its time from quadratic into linear on the usual,
// nearly sequential history. Operations are taken in call order; a cut before operation k (call
// T) is one of two kinds.
//
// A quiet cut, when every operation before k returned before T: all of them are linearized
// before all the rest, in every order. It needs every acquire before the cut that may be the last
// one linearized before it — an acquire X such that no ok acquire before the cut was called after
// X returned (that one would certainly come after X and take the lock from it) — to have an ok
// release called after X returned, and before the cut. Then in every legal order the last acquire
// before the cut is one of those X, its ok release comes after it with no acquire in between and
// frees the lock, and any later release is a no-op: the lock is free with a time bound no later
// than that release's call, before T. A free state's bound only matters to the next acquire,
// through max(its call, bound) — its call, since it is called after T. So the state at the cut
// acts exactly like the model's initial state (free at 0), which is where porcupine starts each
// partition. (An unknown acquire never qualifies, its return being at infinity, so no cut follows
// it; a release in a later chunk of an acquisition from an earlier one is a no-op either way,
// that acquisition never holding the lock again.)
//
// A cut with waiters, when the operations called before T that have not returned by then (W) are
// all ok acquires — clients waiting for the lock, as in every contended run. The rest of those
// called before T (P) go to the first chunk; W and everything called from T on go to the second,
// which starts with a lockInit operation that sets the state at the cut. It rests on a lemma,
// valid when every release is called no earlier than its acquire returned (checked for the whole
// lock, else there are no such cuts): let free(X) be the earliest moment the lock can stop being
// X's — the earliest call of a release of X, or X's call plus its lease, whichever is first. An
// acquire Y with Y.return < free(X) comes before X in every legal order. (Were X first, from X to
// Y the lock would be held by X or by acquisitions that took over from an expired lease, each
// granted after free(X) > Y.return, with leases ending later and releases called later still, so
// it could be neither free nor expired when Y was granted.) The cut needs:
//
//   - one acquire L in P that comes after every other acquire in P: each other one returned before
//     free(L), and L returned no earlier than free(X) of every other X in P;
//   - L has exactly one release that did not fail, R, which is ok, in P, called after L returned
//     and no later than L's call plus its lease;
//   - every acquire in P returned before w's call plus its lease, for each w in W (so it comes
//     before w), and every w returned before L's call plus its lease (so w cannot be granted
//     while L holds a valid lease, i.e. between L and R).
//
// Then in every legal order P's acquires come first with L last, then R frees the lock from
// min(R's call, L's lease end) = R's call, and then W and the rest follow (P's other releases
// being no-ops wherever they fall after L: they commute with W). So the whole is linearizable
// exactly when P is (from the initial state) and the second chunk is from "free since R's call",
// which its lockInit operation, returning before any of its operations is called, sets.
func lockChunks(ops []porcupine.Operation, minSize int) [][]porcupine.Operation {
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	c := newChunker(ops, minSize)
	for k := range ops {
		o := &ops[k]
		if len(c.cur) >= minSize {
			c.settle(o.Call)
			switch {
			case c.maxRet < o.Call && !slices.ContainsFunc(c.cands, func(x cand) bool { return !c.freed[x.acq] }):
				c.out = append(c.out, c.cur)
				c.reset()
			case len(c.pending) > 0:
				if t, ok := c.waitersCut(o.Call); ok {
					w := slices.Clone(c.pending)
					first := c.cur[:0:0]
					for _, x := range c.cur {
						if x.Return < o.Call {
							first = append(first, x)
						}
					}
					c.out = append(c.out, first)
					c.reset()
					minCall := w[0].Call
					init := porcupine.Operation{ClientId: 0, Input: lockInput{kind: lockInit, call: t, ret: t},
						Call: minCall - 1, Output: "ok", Return: minCall - 1, Metadata: int64(0)}
					c.add(&init)
					for _, x := range w {
						c.add(x)
					}
				}
			}
		}
		c.add(o)
	}
	if len(c.cur) > 0 {
		c.out = append(c.out, c.cur)
	}
	return c.out
}

// chunker is lockChunks' state: what it knows of the whole lock history, the chunks cut so far,
// and the chunk being built with what its next cut needs.
type chunker struct {
	minSize int
	rels    map[int64][]*porcupine.Operation // the releases of each acquisition
	lemma   bool                             // every release comes after its acquire returned

	out [][]porcupine.Operation
	cur []porcupine.Operation // the chunk being built

	// For quiet cuts.
	cands              []cand          // acquires of this chunk that may be linearized last
	acqRet             map[int64]int64 // return of each acquire seen
	freed              map[int64]bool  // acquisitions with an ok release called after they returned
	maxRet, maxAcqCall int64

	// For cuts with waiters: the chunk's operations not returned before the current T, and over
	// its acquires that have: the largest free() (f1, of acquire l), the two largest returns
	// (ret1 of acquire r1id, ret2), the largest return, and whether all of them are ok.
	pending                          []*porcupine.Operation
	f1, ret1, ret2, maxAcqRetP, r1id int64
	l                                *porcupine.Operation
	allOk                            bool
}

// cand is an acquire of the chunk that may be linearized last before a quiet cut.
type cand struct{ acq, ret int64 }

func lockIn(o *porcupine.Operation) lockInput { return o.Input.(lockInput) }

// newChunker reads ops, the whole lock history in call order: the releases of each acquisition,
// and whether every release comes after its acquire returned.
func newChunker(ops []porcupine.Operation, minSize int) *chunker {
	acqOf := map[int64]*porcupine.Operation{}
	for k := range ops {
		if x := lockIn(&ops[k]); x.kind == lockAcquire {
			acqOf[x.acq] = &ops[k]
		}
	}
	c := &chunker{minSize: minSize, rels: map[int64][]*porcupine.Operation{}, lemma: true,
		acqRet: map[int64]int64{}, freed: map[int64]bool{}}
	for k := range ops {
		o := &ops[k]
		if x := lockIn(o); x.kind == lockRelease {
			c.rels[x.acq] = append(c.rels[x.acq], o)
			if a, ok := acqOf[x.acq]; !ok || o.Call < a.Return {
				c.lemma = false
			}
		}
	}
	c.reset()
	return c
}

// leaseEnd is o's call plus its lease, Never without TTL.
func (c *chunker) leaseEnd(o *porcupine.Operation) int64 {
	if x := lockIn(o); x.ttl > 0 {
		return o.Call + x.ttl
	}
	return history.Never
}

// freeOf is free(o): the earliest call of a release of o, or its lease's end, whichever is first.
func (c *chunker) freeOf(o *porcupine.Operation) int64 {
	f := c.leaseEnd(o)
	for _, r := range c.rels[lockIn(o).acq] {
		f = min(f, r.Call)
	}
	return f
}

// reset starts a new chunk.
func (c *chunker) reset() {
	c.cur, c.cands, c.pending = make([]porcupine.Operation, 0, c.minSize+c.minSize/4), c.cands[:0], c.pending[:0]
	c.maxRet, c.maxAcqCall = -1, -1
	c.f1, c.ret1, c.ret2, c.maxAcqRetP, c.r1id, c.l, c.allOk = -1, -1, -1, -1, 0, nil, true
}

// add adds a chunk operation, in call order.
func (c *chunker) add(o *porcupine.Operation) {
	c.cur = append(c.cur, *o)
	c.maxRet = max(c.maxRet, o.Return)
	x := lockIn(o)
	switch {
	case x.kind == lockAcquire:
		c.acqRet[x.acq] = o.Return
		if !x.unknown && o.Call > c.maxAcqCall {
			c.maxAcqCall = o.Call
			c.cands = slices.DeleteFunc(c.cands, func(d cand) bool { return d.ret < c.maxAcqCall })
		}
		c.cands = append(c.cands, cand{acq: x.acq, ret: o.Return})
	case x.kind == lockRelease && !x.unknown:
		if t, ok := c.acqRet[x.acq]; ok && o.Call > t {
			c.freed[x.acq] = true
		}
	}
	if x.kind != lockInit {
		c.pending = append(c.pending, o)
	}
}

// settle takes the operations of the chunk that returned before t out of pending.
func (c *chunker) settle(t int64) {
	c.pending = slices.DeleteFunc(c.pending, func(o *porcupine.Operation) bool {
		if o.Return >= t {
			return false
		}
		if x := lockIn(o); x.kind == lockAcquire {
			if x.unknown {
				c.allOk = false
			}
			c.maxAcqRetP = max(c.maxAcqRetP, o.Return)
			if f := c.freeOf(o); f > c.f1 {
				c.f1, c.l = f, o
			}
			if o.Return > c.ret1 {
				c.ret1, c.ret2, c.r1id = o.Return, c.ret1, x.acq
			} else {
				c.ret2 = max(c.ret2, o.Return)
			}
		}
		return true
	})
}

// waitersCut returns the state at a cut with waiters before t, if there can be one. L is the
// acquire with the largest free(); it is last if every other one returned before free(L).
func (c *chunker) waitersCut(t int64) (int64, bool) {
	if !c.lemma || !c.allOk || c.l == nil {
		return 0, false
	}
	other := c.ret1
	if c.r1id == lockIn(c.l).acq {
		other = c.ret2
	}
	if other >= c.f1 {
		return 0, false // L is not certainly the last acquire
	}
	rs := c.rels[lockIn(c.l).acq]
	if len(rs) != 1 || lockIn(rs[0]).unknown || rs[0].Call <= c.l.Return || rs[0].Call > c.leaseEnd(c.l) || rs[0].Return >= t {
		return 0, false
	}
	for _, w := range c.pending {
		if x := lockIn(w); x.kind != lockAcquire || x.unknown || c.maxAcqRetP >= c.leaseEnd(w) || w.Return >= c.leaseEnd(c.l) {
			return 0, false
		}
	}
	return rs[0].Call, true
}
