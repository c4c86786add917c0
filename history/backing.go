package history

import "fmt"

// backing follows, client by client, what the wire showed of each acquisition while it was under
// way (a client runs one operation at a time): how many requests it sent, whether a reply did what
// its request asked, and the last of each, so that a grant no reply backed can say so
// (Operation.Unbacked). It sees lines in file order, which is time order.
type backing struct {
	acq map[int]*acquiring // client → its acquisition under way
}

type acquiring struct {
	id         int64
	sent       int
	backed     bool
	req, reply WireLine // the last request, and the last reply
	replied    bool
}

// see takes one line of the history.
func (b *backing) see(e *Event) {
	switch {
	case e.Type == TypeInvoke && e.Op == OpAcquire:
		if b.acq == nil {
			b.acq = map[int]*acquiring{}
		}
		a := b.acq[e.Client]
		if a == nil {
			a = &acquiring{}
			b.acq[e.Client] = a
		}
		*a = acquiring{id: e.ID}
	case e.Type == TypeWire:
		a := b.acq[e.Client]
		if a == nil || a.id == 0 {
			return
		}
		if e.Dir == WireReply {
			a.reply, a.replied = wireLine(e), true
			a.backed = a.backed || !e.Refused
			return
		}
		a.sent++
		a.req = wireLine(e)
	}
}

// complete judges acquire o at its completion line e (the acquisition's state is then dropped).
func (b *backing) complete(o *Operation, e *Event) {
	a := b.acq[o.Client]
	if o.Op != OpAcquire || a == nil || a.id != o.ID {
		return
	}
	if e.Type == TypeOk && a.sent > 0 && !a.backed {
		o.Unbacked = a.String()
	}
	a.id = 0
}

// String says what the wire showed of an acquisition no reply backed.
func (a *acquiring) String() string {
	sent := "1 request sent"
	if a.sent > 1 {
		sent = fmt.Sprintf("%d requests sent", a.sent)
	}
	last := fmt.Sprintf("%s to %s at %s", a.req.Text, a.req.Node, FormatNs(a.req.At))
	switch {
	case !a.replied:
		return fmt.Sprintf("%s, no reply before the grant (the last request: %s)", sent, last)
	case a.reply.At < a.req.At:
		return fmt.Sprintf("%s, the replies refused them (the last: %s), and the last request, %s, got no reply before the grant",
			sent, a.reply.Text, last)
	default:
		return fmt.Sprintf("%s, each reply refused: the last request, %s, was answered %s", sent, last, a.reply.Text)
	}
}
