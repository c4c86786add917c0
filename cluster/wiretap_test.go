package cluster

import (
	"bytes"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/third_party/toxiproxy/stream"
	"github.com/lockchaos/lockchaos/third_party/toxiproxy/toxics"
)

// The wire toxic on its own, without servers or a proxy (the faults package's wire tests run it
// against real servers): messages go on in order, a held one holds everything behind it across an
// interrupt, its afters run once it was handed on, messages no watcher acted on go on together,
// and a chunk's bytes are handed on without being copied or written over.

func respCmd(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

type tapRig struct {
	t     *testing.T
	tap   *WireTap
	toxic *wireToxic
	in    chan *stream.StreamChunk
	out   chan *stream.StreamChunk
	stub  *toxics.ToxicStub
	done  chan struct{}
	state any
}

func newTapRig(t *testing.T) *tapRig {
	tap := &WireTap{client: 1, node: "redis-1", proto: protoRESP}
	id := registerTap(tap)
	t.Cleanup(func() { unregisterTap(id) })
	r := &tapRig{t: t, tap: tap, toxic: &wireToxic{Tap: id}, in: make(chan *stream.StreamChunk),
		out: make(chan *stream.StreamChunk, 100)}
	r.state = r.toxic.NewState()
	r.start()
	return r
}

// start runs Pipe, as toxiproxy does again after each interrupt, on the stream's kept state.
func (r *tapRig) start() {
	r.stub = toxics.NewToxicStub(r.in, r.out)
	r.stub.State = r.state
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		r.toxic.Pipe(r.stub)
	}()
}

func (r *tapRig) interrupt() {
	r.stub.Interrupt <- struct{}{}
	<-r.done
}

// got returns the chunks handed on so far.
func (r *tapRig) got() []*stream.StreamChunk {
	var cs []*stream.StreamChunk
	for {
		select {
		case c := <-r.out:
			cs = append(cs, c)
		default:
			return cs
		}
	}
}

func joined(cs []*stream.StreamChunk) []byte {
	var b []byte
	for _, c := range cs {
		b = append(b, c.Data...)
	}
	return b
}

func TestWireTapHoldKeepsOrderAcrossInterrupt(t *testing.T) {
	r := newTapRig(t)
	ping, set, del, get := respCmd("PING"), respCmd("SET", "k", "v", "NX"), respCmd("DEL", "k"), respCmd("GET", "k")
	hold := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	var handed []byte // what had been handed on when DEL's after ran
	afterDone := make(chan struct{})
	r.tap.Watch(func(e WireEvent) WireAction {
		mu.Lock()
		seen = append(seen, e.Msg.Cmd)
		mu.Unlock()
		switch e.Msg.Cmd {
		case "DEL":
			return WireAction{Hold: hold, After: func() { handed = joined(r.got()); close(afterDone) }}
		case "SET":
			return WireAction{After: func() {}}
		}
		return WireAction{}
	})
	// PING and the first half of SET, then the rest of SET, DEL and GET in one chunk.
	first := append(slices.Clone(ping), set[:5]...)
	r.in <- &stream.StreamChunk{Data: first}
	r.in <- &stream.StreamChunk{Data: slices.Concat(set[5:], del, get)}
	time.Sleep(50 * time.Millisecond)
	if b, want := joined(r.got()), slices.Concat(ping, set); !bytes.Equal(b, want) {
		t.Fatalf("before the hold ended, handed on %q, want %q (nothing of the held DEL or behind it)", b, want)
	}
	r.interrupt() // toxiproxy interrupts a toxic to change the chain: the held DEL stays held
	r.start()
	time.Sleep(20 * time.Millisecond)
	if b := joined(r.got()); len(b) > 0 {
		t.Fatalf("after the restart, handed on %q while DEL is held", b)
	}
	close(hold)
	deadline := time.After(5 * time.Second)
	select {
	case <-afterDone:
	case <-deadline:
		t.Fatal("DEL's after did not run once its hold ended")
	}
	rest := slices.Clone(handed)
	for !bytes.Equal(rest, slices.Concat(del, get)) {
		select {
		case c := <-r.out:
			rest = append(rest, c.Data...)
		case <-deadline:
			t.Fatalf("after the hold ended, handed on %q, want DEL then GET", rest)
		}
	}
	if !bytes.Equal(handed, del) {
		t.Errorf("DEL's after ran when %q had been handed on, want DEL (and not GET)", handed)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"PING", "SET", "DEL", "GET"}; !slices.Equal(seen, want) {
		t.Errorf("watchers saw %v, want %v", seen, want)
	}
	close(r.in)
	<-r.done
}

func TestWireTapHandsChunksOn(t *testing.T) {
	r := newTapRig(t)
	var afterRan []string
	r.tap.Watch(func(e WireEvent) WireAction {
		if e.Msg.Cmd == "SET" {
			return WireAction{After: func() { afterRan = append(afterRan, e.Msg.Cmd) }}
		}
		return WireAction{}
	})
	// One message, one chunk: the chunk itself goes on.
	c := &stream.StreamChunk{Data: respCmd("GET", "k")}
	r.in <- c
	if got := <-r.out; got != c {
		t.Errorf("a chunk of one whole message was not handed on as it came")
	}
	// Messages nobody acted on go on together; one with an after ends the run.
	ping, set, get := respCmd("PING"), respCmd("SET", "k", "v"), respCmd("GET", "k")
	r.in <- &stream.StreamChunk{Data: slices.Concat(ping, ping, set, get, ping)}
	var cs []*stream.StreamChunk
	for len(joined(cs)) < len(ping)*3+len(set)+len(get) {
		cs = append(cs, <-r.out)
	}
	if len(cs) != 2 || !bytes.Equal(cs[0].Data, slices.Concat(ping, ping, set)) || !bytes.Equal(cs[1].Data, slices.Concat(get, ping)) {
		var parts [][]byte
		for _, c := range cs {
			parts = append(parts, c.Data)
		}
		t.Errorf("handed on %d chunks %q, want PING PING SET, then GET PING", len(cs), parts)
	}
	// A chunk may be a slice of a larger array whose rest is someone else's (a toxic before this
	// one that cuts chunks, or keeps its own bytes behind them): completing a partial message must
	// not write into the bytes behind the chunk.
	arr := slices.Concat(get, set[:7], bytes.Repeat([]byte("someone else's bytes "), 8))
	orig := slices.Clone(arr)
	a := arr[:len(get)+7]
	r.in <- &stream.StreamChunk{Data: a}
	r.in <- &stream.StreamChunk{Data: slices.Concat(set[7:], ping)}
	cs = nil
	want := slices.Concat(get, set, ping)
	for len(joined(cs)) < len(want) {
		cs = append(cs, <-r.out)
	}
	if !bytes.Equal(joined(cs), want) || !bytes.Equal(arr, orig) {
		t.Errorf("handed on %q, want %q; the chunk's array is now %q, was %q", joined(cs), want, arr, orig)
	}
	close(r.in)
	<-r.done
	if !slices.Equal(afterRan, []string{"SET", "SET"}) {
		t.Errorf("afters ran for %v, want SET's twice", afterRan)
	}
}
