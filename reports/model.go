package reports

import (
	"sort"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// runModel is a history arranged for drawing: per client, what it asked for, what it held and
// what it did while holding. It is derived from the history alone; verdicts come from the checker.
type runModel struct {
	meta     history.Meta
	clients  []int // sorted client numbers
	end      int64 // last finite time in the history
	attempts []attempt
	windows  []window
	accesses []access
	releases []release
	faults   []history.FaultSpan
	leases   []checker.Lease
	danger   [][2]int64     // the danger windows of the faults (docs/design.md#evidence)
	illegal  map[int64]bool // acquires the lock service granted illegally
	byAcq    map[int64]int  // acquire id → index into windows
	byOp     map[int64]*history.Operation
	ops      []history.Operation
}

// attempt is one acquire call, granted or not.
type attempt struct {
	client    int
	call, end int64 // end is the completion line's time, or the run's end if there is none
	status    history.Type
}

// window is one acquisition's holding window, as the checker computed it (checker.Hold): granted
// at grant, last used at end. expiry is when the holder's own validity ran out (0 when it has
// none).
type window struct {
	acq    int64
	client int
	call   int64 // acquire invocation
	grant  int64 // acquire return
	end    int64
	expiry int64
	fence  uint64
}

// access is a read or write of the shared resource.
type access struct {
	client    int
	acq       int64
	op        history.Op
	call, end int64
	status    history.Type
	value     *int64
	err       string
}

// release is one release call.
type release struct {
	client    int
	acq       int64
	call, end int64
	status    history.Type
}

// buildModel arranges h for drawing, with the holding windows, leases and danger windows of the
// checker's analysis: the report draws what the checker judged, never a window of its own.
func buildModel(h *history.Run, an *checker.Analysis) *runModel {
	ops := h.Ops
	m := &runModel{
		meta:    h.Meta,
		faults:  h.Faults,
		end:     h.End,
		byAcq:   make(map[int64]int),
		byOp:    make(map[int64]*history.Operation, len(ops)),
		ops:     ops,
		leases:  an.Leases,
		danger:  an.Danger,
		illegal: map[int64]bool{},
	}
	for _, v := range an.Violations {
		if v.Kind == "service" {
			m.illegal[v.B.ID] = true
		}
	}
	for _, hd := range an.Holds {
		m.byAcq[hd.Acq] = len(m.windows)
		m.windows = append(m.windows, window{acq: hd.Acq, client: hd.Client, call: hd.Call, grant: hd.Grant,
			end: hd.End, expiry: hd.Expiry, fence: hd.Fence})
	}
	seen := map[int]bool{}
	for c := 1; c <= h.Meta.Clients; c++ {
		seen[c] = true
	}
	finish := func(o *history.Operation) int64 {
		if o.Done != history.Never {
			return o.Done
		}
		return m.end
	}
	for i := range ops {
		o := &ops[i]
		m.byOp[o.ID] = o
		if o.Client > 0 {
			seen[o.Client] = true
		}
		switch o.Op {
		case history.OpAcquire:
			m.attempts = append(m.attempts, attempt{o.Client, o.Call, finish(o), o.Status})
		case history.OpRead, history.OpWrite:
			m.accesses = append(m.accesses, access{o.Client, o.Acq, o.Op, o.Call, finish(o), o.Status, o.Value, o.Error})
		case history.OpRelease:
			m.releases = append(m.releases, release{o.Client, o.Acq, o.Call, finish(o), o.Status})
		}
	}
	for c := range seen {
		m.clients = append(m.clients, c)
	}
	sort.Ints(m.clients)
	for _, f := range m.faults {
		if f.End != history.Never && f.End > m.end {
			m.end = f.End
		}
	}
	return m
}

// clip maps an open end (never returned) to the end of the run, for drawing.
func (m *runModel) clip(t int64) int64 {
	if t == history.Never || t > m.end {
		return m.end
	}
	return t
}

// acqOf returns the acquire an operation ran under (itself, for an acquire), 0 if none.
func (m *runModel) acqOf(id int64) int64 {
	o := m.byOp[id]
	if o == nil {
		return 0
	}
	if o.Op == history.OpAcquire {
		return o.ID
	}
	return o.Acq
}
