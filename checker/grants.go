package checker

import (
	"cmp"
	"slices"

	"github.com/lockchaos/lockchaos/history"
)

// grant is one illegal grant found by the direct sweep: b was granted while a's lease was valid.
type grant struct {
	a, b  int
	until int64 // earliest end of a's lease (Never: no TTL)
}

// illegalGrants counts illegal grants directly, because porcupine only answers yes or no.
//
// Per lock, the successful acquires are taken in return order, and each grant B is compared with
// the grant A just before it (the holder as the service saw it, even if A's own grant was
// illegal). B is counted when, in every timing the history allows, B was granted while A held a
// valid lease:
//
//   - A's lease cannot have expired: B.return < A.start + TTL·(1−drift) (never, with no TTL);
//   - A had not begun releasing: no ok or unknown release of A was invoked by B.return;
//   - and if the two acquires overlap, so that B might have been granted first, A's grant is
//     illegal in that order too: B's lease cannot have expired nor been released by A.return.
//
// A.start is a lower bound of when A's lease began, computed as the model does: when A's winning
// attempt was sent (its call when the history does not say), or, when
// A can only have been granted after its predecessor P, the moment P's lock can first have become
// free (P's earliest expiry, or P's release call if earlier). It matters for a client that waited
// long in acquire: its call says nothing about when its lease began.
//
// The count is a lower bound of the illegal grants porcupine rejects, so porcupine can say
// Illegal with a count of 0; the checker then reports at least 1.
func (r *run) illegalGrants() []grant {
	out, _ := r.grantsFrom(grantCarry{})
	return out
}

// grantCarry is the sweep's state at the end of a segment: the last grant (a copy, with the
// earliest call of its release when it has one) and the lower bound of when its lease began.
type grantCarry struct {
	a        *history.Operation
	rel      int64
	released bool
	aStart   int64
}

// grantsFrom is illegalGrants on a segment of the history, starting from the state the previous
// segment ended in (the zero grantCarry for the first). A grant against the carried acquire is
// returned with a = -1.
func (r *run) grantsFrom(c grantCarry) ([]grant, grantCarry) {
	rel := r.releaseCalls() // acquire index → earliest ok or unknown release call
	released := func(j int, by int64) bool {
		t, ok := rel[j]
		return ok && t <= by
	}
	var acq []int
	for i := range r.ops {
		if r.ops[i].Op == history.OpAcquire && r.ops[i].Ok() {
			acq = append(acq, i)
		}
	}
	slices.SortFunc(acq, func(x, y int) int {
		a, b := &r.ops[x], &r.ops[y]
		if c := cmp.Compare(a.Lock, b.Lock); c != 0 {
			return c
		}
		return cmp.Compare(a.Return, b.Return)
	})
	var out []grant
	aStart := c.aStart
	for k, bi := range acq {
		b := &r.ops[bi]
		ai, a, relA, hasRelA := -1, c.a, c.rel, c.released
		if k > 0 {
			ai = acq[k-1]
			a = &r.ops[ai]
			relA, hasRelA = rel[ai]
		}
		if a == nil || a.Lock != b.Lock {
			aStart = b.Sent
			continue
		}
		ttlA, ttlB := r.ttl(a), r.ttl(b)
		expired := ttlA > 0 && b.Return >= aStart+ttlA
		wasReleased := hasRelA && relA <= b.Return
		bFirst := b.Sent <= a.Return && ((ttlB > 0 && a.Return >= b.Sent+ttlB) || released(bi, a.Return))
		switch {
		case !expired && !wasReleased && !bFirst:
			until := history.Never
			if ttlA > 0 {
				until = aStart + ttlA
			}
			out = append(out, grant{a: ai, b: bi, until: until})
			aStart = b.Sent
		case bFirst:
			aStart = b.Sent
		default:
			free := history.Never
			if ttlA > 0 {
				free = aStart + ttlA
			}
			if wasReleased {
				free = min(free, relA)
			}
			aStart = max(b.Sent, free)
		}
	}
	if n := len(acq); n > 0 {
		last := r.ops[acq[n-1]]
		c = grantCarry{a: &last, aStart: aStart}
		c.rel, c.released = rel[acq[n-1]]
	}
	return out, c
}
