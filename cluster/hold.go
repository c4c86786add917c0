package cluster

import (
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// HoldToxic is the toxic type of a faithful partition (DESIGN.md §4): while it is on a stream, no
// byte passes and none is lost; when it is removed, everything sent meanwhile is delivered in order
// and the connection stays open — what TCP retransmission does across a network partition once the
// network heals. Toxiproxy's own timeout toxic drops the bytes and closes the connection when it is
// removed: a firewall reset, lockchaos's partition-reset.
//
// The toxic does not read its input while it holds: the chunks wait in toxiproxy's pipeline, the
// proxy stops reading the socket, and the sender's kernel buffers fill as behind a dead switch.
// When the toxic is removed, toxiproxy drains the waiting chunks to the next stage in order
// (ToxicLink.RemoveToxic); a sender that closed its socket meanwhile still has what it wrote before
// the close delivered, then the close.
//
// On a remote toxiproxy-server (the external backend), which knows only its own toxics, a hold is
// a latency toxic of a day (remoteHold): it holds every chunk and, when removed, lets the one it
// was delaying and all that queued behind it through in order, as the hold does.
const HoldToxic = "lockchaos-hold"

// holdToxic holds the stream until it is removed.
type holdToxic struct{}

// Pipe waits for an interrupt (the toxic removed, or another added after it) without reading its
// input; toxiproxy runs it again when it was only interrupted to add another toxic.
func (holdToxic) Pipe(stub *toxics.ToxicStub) { <-stub.Interrupt }

func init() { toxics.Register(HoldToxic, new(holdToxic)) }

// remoteHold is the hold on a remote toxiproxy-server: latency longer than any run.
var remoteHold = map[string]any{"latency": int64(24 * 60 * 60 * 1000), "jitter": 0}
