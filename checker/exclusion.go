package checker

import (
	"cmp"
	"slices"

	"github.com/lockchaos/lockchaos/history"
)

// A window is the time an acquisition held the lock as far as the resource can tell
// (docs/design.md#checks): from the acquire's return to the return of the last read or write made under it.
type window struct {
	lock       string
	acq        int // index of the acquire op
	start, end int64
	last       int // index of the access that ends the window, -1 when there is none
}

// overlap is one exclusion violation: window b started while window a was still open.
type overlap struct {
	a, b int // indices of the acquire ops
	at   int64
	aEnd int // index of a's access that extends past b's start
}

// windows computes every holding window.
//
// The window ends at the return of the last access; an access the resource rejected (stale fence)
// still counts, since the holder did reach the resource. An access with an unknown outcome counts
// from its invocation: it may have happened at any time after that, so its invocation is the
// earliest moment we know the holder was still using the lock.
//
// An acquisition with no access at all has a point window [return, return]. We do not stretch it
// to the release: a holder that never touched the resource cannot have broken exclusion on it,
// and a release is the lock service's business, judged by the lock check.
//
// An acquire whose outcome is unknown (or failed) but which has accesses under it still gets a
// window, from its first access's invocation: the client acted as the holder from then on.
func (r *run) windows() []window {
	ends := make([]int64, len(r.ops))
	last := make([]int32, len(r.ops))
	first := make([]int64, len(r.ops))
	for i := range last {
		last[i] = -1
	}
	for i := range r.ops {
		o := &r.ops[i]
		if o.Op != history.OpRead && o.Op != history.OpWrite {
			continue
		}
		j, ok := r.acquireOf(o)
		if !ok {
			continue
		}
		t := o.Return
		if t == history.Never {
			t = o.Call
		}
		if last[j] < 0 {
			ends[j], last[j], first[j] = t, int32(i), o.Call
			continue
		}
		if t > ends[j] {
			ends[j], last[j] = t, int32(i)
		}
		first[j] = min(first[j], o.Call)
	}
	ws := make([]window, 0, len(r.ops)/4+1)
	for j := range r.ops {
		a := &r.ops[j]
		if a.Op != history.OpAcquire {
			continue
		}
		var start int64
		switch {
		case a.Ok():
			start = a.Return
		case last[j] >= 0:
			start = first[j]
		default:
			continue
		}
		end := max(start, ends[j])
		ws = append(ws, window{lock: a.Lock, acq: j, start: start, end: end, last: int(last[j])})
	}
	return ws
}

// exclusion finds the overlapping windows in O(n log n): sorted by start, a window that starts
// before the largest end seen so far (of the same lock) overlaps the window with that end.
//
// What is counted is acquisitions, not pairs: each window that began while another acquisition's
// window was still open is one violation, however many windows it overlaps. That is the number
// of times the lock was handed to a second user while the first still used the resource, and it
// cannot blow up quadratically on one very long window. Windows that only touch (b starts at the
// very nanosecond a ends) do not overlap.
func (r *run) exclusion(ws []window) []overlap {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(x, y window) int {
		if c := cmp.Compare(x.lock, y.lock); c != 0 {
			return c
		}
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		return cmp.Compare(x.end, y.end)
	})
	var out []overlap
	for i := 0; i < len(ws); {
		maxAt := i
		for j := i + 1; j < len(ws) && ws[j].lock == ws[i].lock; j++ {
			w := &ws[j]
			// A window without accesses (a careful holder that found its lease gone) is a point
			// that marks a grant, not a use: it overlaps nothing.
			if w.start < ws[maxAt].end && w.last >= 0 {
				out = append(out, overlap{a: ws[maxAt].acq, b: w.acq, at: w.start, aEnd: ws[maxAt].last})
			}
			if w.end > ws[maxAt].end {
				maxAt = j
			}
		}
		n := i + 1
		for n < len(ws) && ws[n].lock == ws[i].lock {
			n++
		}
		i = n
	}
	slices.SortStableFunc(out, func(x, y overlap) int { return cmp.Compare(x.at, y.at) })
	return out
}

// heldNs is the time some window was open: the union of ws, in ns.
func heldNs(ws []window) int64 {
	spans := make([][2]int64, 0, len(ws))
	for _, w := range ws {
		if w.end > w.start {
			spans = append(spans, [2]int64{w.start, w.end})
		}
	}
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var total, end int64
	for _, sp := range spans {
		from := max(sp[0], end)
		if sp[1] > from {
			total += sp[1] - from
		}
		end = max(end, sp[1])
	}
	return total
}
