package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// unbackedRun is a run of serial critical sections on one Redis whose acquisitions each send SET
// NX and get their reply; in the section at t=100ms, client 2's SET is answered by reply (or not
// at all when reply is "") and client 2 reports the grant anyway.
func unbackedRun(reply string, refused bool) *history.History {
	b := newHB("token", 500*time.Millisecond)
	wire := func(client int, t float64, dir, text string, refused bool) {
		b.add(history.Event{Type: history.TypeWire, AtNs: at(t), Client: client, Node: "redis-1", Dir: dir,
			Cmd: "SET", Key: "lock", Detail: text, Refused: refused})
	}
	for i := range 20 {
		t, client := float64(i*10), i%3+1
		b.id++
		acq := b.id
		b.add(history.Event{Type: history.TypeInvoke, ID: acq, Op: history.OpAcquire, Client: client, Lock: "lock", AtNs: at(t)})
		wire(client, t+0.2, history.WireRequest, "SET lock tok NX PX 500", false)
		switch {
		case t != 100:
			wire(client, t+0.5, history.WireReply, "+OK", false)
		case reply != "":
			wire(client, t+0.5, history.WireReply, reply, refused)
		}
		b.add(history.Event{Type: history.TypeOk, ID: acq, AtNs: at(t + 1)})
		b.read(client, acq, t+2, t+3, b.value)
		b.write(client, acq, t+4, t+5, b.value+1)
		b.value++
		b.release(client, acq, t+6, t+7)
	}
	return b.history()
}

// TestUnbackedGrant: a grant whose every reply refused it, or that no reply answered, is its
// own client-class violation, named with what the wire showed — whole and in segments; a grant a
// reply backed is not.
func TestUnbackedGrant(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		refused     bool
		cause       string // "" = safe
	}{
		{"backed", "+OK", false, ""},
		{"refused", "-READONLY You can't write against a read only replica.", true,
			"client 2's acquisition (op 41) got no successful reply: 1 request sent, each reply refused: the last request, SET lock tok NX PX 500 to redis-1 at 100 ms, was answered -READONLY"},
		{"no reply", "", false,
			"client 2's acquisition (op 41) got no successful reply: 1 request sent, no reply before the grant (the last request: SET lock tok NX PX 500 to redis-1 at 100 ms)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := unbackedRun(tc.reply, tc.refused)
			res := CheckHistory(h, Options{}).Result
			if tc.cause == "" {
				if res.Verdict != Safe || res.UnbackedGrants != 0 {
					t.Fatalf("verdict %s, %d unbacked grants (%s): want safe", res.Verdict, res.UnbackedGrants, res.DecidedBy)
				}
				return
			}
			v := res.FirstViolation
			if res.Verdict != Unsafe || v == nil || v.Kind != "unbacked-grant" || v.Class != ClientClass || res.UnbackedGrants != 1 {
				t.Fatalf("verdict %s, first violation %+v, %d unbacked: want unsafe, one unbacked-grant of the client class", res.Verdict, v, res.UnbackedGrants)
			}
			if !strings.HasPrefix(v.Cause, tc.cause) || !strings.Contains(res.DecidedBy, "1 unbacked grant (") {
				t.Errorf("cause %q\nwant it to start %q; decided by %q", v.Cause, tc.cause, res.DecidedBy)
			}
			sameAsWhole(t, h, 8)
		})
	}
}
