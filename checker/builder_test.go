package checker

import (
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// hb builds histories by hand: times are in milliseconds, ids are assigned in order.
type hb struct {
	h     history.History
	id    int64
	fault int64
	value int64 // the counter, for cs
}

func newHB(algorithm string, ttl time.Duration) *hb {
	return &hb{h: history.History{Meta: history.Meta{Type: history.TypeMeta, Algorithm: algorithm, Scenario: "test",
		Backend: "local", Seed: 1, Clients: 5, TTLNs: int64(ttl)}}}
}

func at(msec float64) int64 { return int64(msec * float64(time.Millisecond)) }

func (b *hb) add(e history.Event) { b.h.Events = append(b.h.Events, e) }

// op records an invocation and, unless done is "", its completion.
func (b *hb) op(op history.Op, client int, acq int64, call float64, done history.Type, ret float64, value *int64, errText string) int64 {
	b.id++
	inv := history.Event{Type: history.TypeInvoke, ID: b.id, Op: op, Client: client, Acq: acq, AtNs: at(call)}
	if op == history.OpAcquire {
		inv.Lock = "lock"
	}
	if op == history.OpWrite {
		inv.Value = value
	}
	b.add(inv)
	if done != "" {
		c := history.Event{Type: done, ID: b.id, AtNs: at(ret), Error: errText}
		if op == history.OpRead {
			c.Value = value
		}
		b.add(c)
	}
	return b.id
}

func (b *hb) acquire(client int, call, ret float64) int64 {
	return b.op(history.OpAcquire, client, 0, call, history.TypeOk, ret, nil, "")
}

func (b *hb) read(client int, acq int64, call, ret float64, v int64) int64 {
	return b.op(history.OpRead, client, acq, call, history.TypeOk, ret, history.Int64(v), "")
}

func (b *hb) write(client int, acq int64, call, ret float64, v int64) int64 {
	return b.op(history.OpWrite, client, acq, call, history.TypeOk, ret, history.Int64(v), "")
}

func (b *hb) release(client int, acq int64, call, ret float64) int64 {
	return b.op(history.OpRelease, client, acq, call, history.TypeOk, ret, nil, "")
}

// cs records a whole serial critical section starting at t: acquire, read, write the next
// value, release, each taking 1ms. It returns the acquisition.
func (b *hb) cs(client int, t float64) int64 {
	a := b.acquire(client, t, t+1)
	b.read(client, a, t+2, t+3, b.value)
	b.write(client, a, t+4, t+5, b.value+1)
	b.value++
	b.release(client, a, t+6, t+7)
	return a
}

func (b *hb) faultSpan(name string, start, end float64, errText string) {
	b.fault++
	b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: b.fault, Name: name, Target: "client-1", AtNs: at(start)})
	if end >= 0 {
		b.add(history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: b.fault, AtNs: at(end), Error: errText})
	}
}

func (b *hb) history() *history.History { return &b.h }
