package harness

import (
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/wire"
	"github.com/lockchaos/lockchaos/history"
)

// recorder stamps events with the run's one monotonic clock and appends them to the history.
type recorder struct {
	w      *history.Writer
	base   time.Time
	nextID atomic.Int64
	err    atomic.Pointer[error]
	// decider sees every event when Config.Decide is set.
	decider *decider
}

// Benchmark hooks (bench_test.go), unset in every real run: benchObserve sees every event as it
// is written (a subscription to the history writer, see Run) or, with benchNoRecord, as it is
// dropped instead of written, so the recording overhead is the rate with it set against the rate
// without. benchWire parses every proxied client link (cluster.Spec.Wire) and records its wire
// lines, as a run with a wire fault does, without any fault: what parsing costs a run.
var (
	benchObserve  func(history.Event)
	benchNoRecord bool
	benchWire     bool
)

func (r *recorder) now() int64 { return int64(time.Since(r.base)) }

// since writes t as the time since the run's start, as history lines and reports show it.
func (r *recorder) since(t time.Time) string { return history.FormatNs(int64(t.Sub(r.base))) }

// write appends e to the history. stamp sets its AtNs to the run's clock under the writer's lock
// (history.Writer.WriteStamped): the clients' invocations and completions are in the file in time
// order, as Jepsen's histories are, and a reader can cut the file where it likes (history's
// segments need no reordering across a cut).
func (r *recorder) write(e history.Event, stamp bool) {
	if benchNoRecord { // benchmarks only
		if stamp {
			e.AtNs = r.now()
		}
		if benchObserve != nil {
			benchObserve(e)
		}
		return
	}
	var err error
	if stamp {
		err = r.w.WriteStamped(e, r.now)
	} else {
		err = r.w.Write(e)
	}
	if err != nil {
		r.fail(err)
	}
}

// fail keeps the first error. The copy is made here: taking &err of write's own variable moved it
// to the heap on every event, failing or not.
func (r *recorder) fail(err error) {
	p := new(error)
	*p = err
	r.err.CompareAndSwap(nil, p)
}

// invoke records an invocation and returns its id.
func (r *recorder) invoke(e history.Event) int64 {
	e.Type, e.ID = history.TypeInvoke, r.nextID.Add(1)
	r.write(e, true)
	return e.ID
}

// complete records the completion of operation id.
func (r *recorder) complete(id int64, typ history.Type, e history.Event) {
	e.Type, e.ID = typ, id
	r.write(e, true)
}

// fault records a fault line, and syncs the file: fault boundaries are what a reader of a killed
// run most needs.
func (r *recorder) fault(e history.Event) {
	r.write(e, false)
	if err := r.w.Sync(); err != nil {
		r.fail(err)
	}
}

// watchWire records every command and reply of the lock on the cluster's parsed links
// (docs/design.md#wire-points) as wire lines, stamped as the message leaves the proxy: a request towards the server, a
// reply towards the client — after any hold a fault put on it, and before the receiver can
// have read it (WireAction.Before), so a reply's line comes before anything its client did on
// reading it. A reply that refused its request is marked (wire.Refused). Connection
// housekeeping (HELLO, pings) and pushes are left out. It returns the function that stops
// recording.
func (r *recorder) watchWire(cl cluster.Cluster, clients int) (stop func()) {
	var stops []func()
	for c := 1; c <= clients; c++ {
		for _, n := range cl.Nodes() {
			tap, err := cl.WireTap(c, n.Name)
			if err != nil {
				continue // a link lockchaos does not parse
			}
			stops = append(stops, tap.Watch(func(e cluster.WireEvent) cluster.WireAction {
				req := e.Msg
				if e.Reply {
					req = e.Req
				}
				if req.Control || req.Cmd == "" || e.Msg.Push {
					return cluster.WireAction{}
				}
				// The before keeps only the line's strings, not a whole Event: it is made for every
				// message of every parsed link, and an Event's size on the heap was most of the
				// bytes a parsed run allocated.
				client, node, cmd, detail, dir, key, refused := e.Client, e.Node, req.Cmd, e.Msg.Text, history.WireRequest, "", false
				if len(req.Keys) > 0 {
					key = req.Keys[0]
				}
				if e.Reply {
					dir, refused = history.WireReply, wire.Refused(req, e.Msg)
				}
				return cluster.WireAction{Before: func() {
					r.write(history.Event{Type: history.TypeWire, Client: client, Node: node, Dir: dir, Cmd: cmd,
						Detail: detail, Key: key, Refused: refused}, true)
				}}
			}))
		}
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}
