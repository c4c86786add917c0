package cluster

import (
	"time"

	"github.com/lockchaos/lockchaos/third_party/toxiproxy/stream"
	"github.com/lockchaos/lockchaos/third_party/toxiproxy/toxics"
)

// HoldToxic is the toxic type of a faithful partition (docs/design.md#faults): while it is on a stream, no
// byte passes and none is lost; when it is removed, everything sent meanwhile is delivered in order
// and the connection stays open — what TCP retransmission does across a network partition once the
// network heals. Toxiproxy's own timeout toxic drops the bytes and closes the connection when it is
// removed: a firewall reset, lockchaos's partition-reset.
//
// The toxic reads its input while it holds and keeps what it read, in order, on the connection's
// stub (its state): a toxic before it that toxiproxy interrupts — to remove it when its own fault
// heals, or to add another — flushes what it was carrying into the hold rather than drop it, and
// must find someone reading, or the removal waits forever with the proxy's toxics locked (a soak's
// latency healed under a partition of the same client hung every heal after it). When the hold
// is removed, its Cleanup delivers what it kept to the next stage in order, then the close if the
// sender closed meanwhile (a sender that closed its socket still has what it wrote before the
// close delivered), and toxiproxy drains what queued behind it.
//
// On a remote toxiproxy-server (the external backend), which knows only its own toxics, a hold is
// a latency toxic of a day (cluster/external's remoteHold): it holds every chunk and, when removed, lets the one it
// was delaying and all that queued behind it through in order, as the hold does.
const HoldToxic = "lockchaos-hold"

// holdToxic holds the stream until it is removed.
type holdToxic struct{}

// held is what a hold took in on one connection's stream.
type held struct {
	chunks []*stream.StreamChunk
	closed bool // the sender closed the stream: delivered after the chunks
}

// NewState is each connection's held (toxiproxy keeps it on the stub across interrupts).
func (holdToxic) NewState() any { return new(held) }

// Pipe keeps what comes until interrupted (the toxic removed, or another added after it);
// toxiproxy runs it again, with the same state, when it was only interrupted to add another.
func (holdToxic) Pipe(stub *toxics.ToxicStub) {
	h, ok := stub.State.(*held)
	if !ok {
		<-stub.Interrupt
		return
	}
	for {
		in := stub.Input
		if h.closed {
			in = nil // nothing more will come
		}
		select {
		case <-stub.Interrupt:
			return
		case c := <-in:
			if c == nil {
				h.closed = true
				continue
			}
			h.chunks = append(h.chunks, c)
		}
	}
}

// holdFlush bounds each delivery of a removed hold, as toxiproxy bounds its own drain.
const holdFlush = 5 * time.Second

// Cleanup, as the hold is removed, delivers what it kept in order, then the close.
func (holdToxic) Cleanup(stub *toxics.ToxicStub) {
	h, ok := stub.State.(*held)
	if !ok {
		return
	}
	for _, c := range h.chunks {
		if stub.WriteOutput(c, holdFlush) != nil {
			break // the next stage is gone: the connection is closing
		}
	}
	h.chunks = nil
	if h.closed {
		stub.Close()
	}
}

func init() { toxics.Register(HoldToxic, new(holdToxic)) }
