package checker

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockchaos/lockchaos/history"
)

// run is a history in the shapes the checks need, built once per Check.
type run struct {
	meta   history.Meta
	opts   Options
	ops    []history.Operation // in invocation order
	faults []history.FaultSpan
	wire   []history.WireLine // the lock's commands on its parsed links, in time order
	end    int64              // time of the last event: the run's duration
	idx    opIndex
	// lockOps is the porcupine history of the lock check, kept to locate its violation.
	lockOps   []porcupine.Operation
	lockParts int // porcupine partitions of lockOps
	warnings  []string
	unfired   []history.UnfiredFault
	danger    [][2]int64   // the danger windows in ns, set by evidence
	gw        []grantWrite // the grants with their latest writes, by grant time (grantWrites)
	// reach is, for a run checked in segments, how far each fault's danger window reached (by
	// fault id) in any segment (extend): a segment ends a window only at its own writes.
	reach map[int64]int64
	// lockFrom is, for a segment of a long history after the first, the lock's state where the
	// previous segment ended.
	lockFrom *lockExit
}

func newRun(h *history.Run, opts Options) *run {
	r := &run{meta: h.Meta, opts: opts.withDefaults(h.Meta), ops: h.Ops, faults: h.Faults, wire: h.Wire, unfired: h.Unfired, end: h.End}
	for i := range r.ops {
		// A completion stamped before its invocation (an edited file) would break the search's
		// ordering: clamp it to the invocation.
		o := &r.ops[i]
		if o.Return < o.Call || o.Done < o.Call {
			r.warnings = append(r.warnings, fmt.Sprintf("operation %d completes before its invocation; treated as completing at its invocation", o.ID))
			o.Return, o.Done = max(o.Return, o.Call), max(o.Done, o.Call)
		}
	}
	r.idx = newOpIndex(r.ops)
	r.endSessionsOfTheDead()
	return r
}

// endSessionsOfTheDead ends, at its holder's crash, a lock that the server holds for as long as
// the holder's session lives (history.NoTTL: PostgreSQL's advisory locks, MariaDB's GET_LOCK).
// A crashed process's connections close and the server ends its sessions — when it notices, at
// once or only after keepalive gives up on a vanished host — and may hand the lock on: no
// violation, for the dead client never uses the lock again. Without this, the lock model would
// hold such a lock forever and call that grant illegal. A lease the server times (a TTL) is
// left as it is: the server does not know its holder died, and must still wait the lease out.
func (r *run) endSessionsOfTheDead() {
	for _, f := range r.faults {
		if !f.KillsClients() || f.Error != "" {
			continue
		}
		for i := range r.ops {
			o := &r.ops[i]
			if o.Op == history.OpAcquire && o.TTLNs < 0 && o.Call < f.Start && slices.Contains(f.TargetClients, o.Client) {
				o.TTLNs = max(f.Start-o.Call, 1)
			}
		}
	}
}

// acquireOf returns the index of the acquire operation an access or release runs under.
func (r *run) acquireOf(o *history.Operation) (int, bool) {
	if o.Acq == 0 {
		return 0, false
	}
	j, ok := r.idx.get(o.Acq)
	if !ok || r.ops[j].Op != history.OpAcquire {
		return 0, false
	}
	return j, true
}

// ttl is the lease the server enforces for the acquire op (its completion's ttl_ns, else the
// run's), shortened by the drift the server clock may have: the earliest the lease can end,
// measured from when the lease started. 0 means the lease never expires: the acquire said so
// (history.NoTTL), or neither it nor the run has a TTL.
func (r *run) ttl(o *history.Operation) int64 {
	t := o.TTLNs
	if t < 0 {
		return 0
	}
	if t == 0 {
		t = r.meta.TTLNs
	}
	if t <= 0 {
		return 0
	}
	eff := t - int64(float64(t)*r.opts.Drift)
	if eff <= 0 {
		eff = 1
	}
	return eff
}

// opIndex finds an operation by id. Recorders number operations densely from 1, so a slice is
// the common case; arbitrary ids (edited or fuzzed files) fall back to a map.
type opIndex struct {
	base   int64 // dense[i] is the operation with id base+i
	dense  []int32
	sparse map[int64]int
}

func newOpIndex(ops []history.Operation) opIndex {
	var minID, maxID int64 = math.MaxInt64, 0
	for i := range ops {
		if id := ops[i].ID; id > 0 {
			minID, maxID = min(minID, id), max(maxID, id)
		}
	}
	if minID > maxID {
		minID = maxID
	}
	// A segment of a long history (ReadSegments) has ids far from 0: the slice starts at its first.
	if maxID-minID <= int64(4*len(ops)+64) && len(ops) < 1<<31-1 {
		d := make([]int32, maxID-minID+1)
		for i := range d {
			d[i] = -1
		}
		for i := range ops {
			if id := ops[i].ID; id > 0 && d[id-minID] < 0 {
				d[id-minID] = int32(i)
			}
		}
		return opIndex{base: minID, dense: d}
	}
	m := make(map[int64]int, len(ops))
	for i := range ops {
		if _, dup := m[ops[i].ID]; !dup {
			m[ops[i].ID] = i
		}
	}
	return opIndex{sparse: m}
}

func (x *opIndex) get(id int64) (int, bool) {
	if x.sparse != nil {
		i, ok := x.sparse[id]
		return i, ok
	}
	if id <= 0 || id < x.base || id-x.base >= int64(len(x.dense)) || x.dense[id-x.base] < 0 {
		return 0, false
	}
	return int(x.dense[id-x.base]), true
}

// ms converts nanoseconds since the run's start to milliseconds.
func ms(ns int64) float64 { return float64(ns) / float64(time.Millisecond) }

// ref describes an operation for a Violation.
func ref(o *history.Operation) OpRef {
	rt := -1.0
	if o.Return != history.Never {
		rt = ms(o.Return)
	}
	return OpRef{ID: o.ID, Op: string(o.Op), Client: o.Client, Acq: o.Acq, CallMs: ms(o.Call), ReturnMs: rt}
}
