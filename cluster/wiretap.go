package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/third_party/toxiproxy/stream"
	"github.com/lockchaos/lockchaos/third_party/toxiproxy/toxics"

	"github.com/lockchaos/lockchaos/cluster/wire"
)

// Wire points (docs/design.md#wire-points). With Spec.Wire, every client link to a Redis, Sentinel or ZooKeeper
// node carries a protocol-aware toxic of ours from the moment its proxy starts, one per stream:
//
//	client ──▶ [wire: requests] ──▶ node          client ◀── [wire: replies] ◀── node
//
// It cuts its stream into messages (cluster/wire) and shows each one to the link's WireTap before
// passing it on, so a fault can act at a lock's own command — hold the DEL of a release until
// another client holds the lock, hold the reply to the winning SET NX past the lease, stop a
// process the moment a reply reaches it — without any help from the lock's code. The toxics are in
// place before any client connects: a stream is parsed from its first byte, and the two streams of
// one connection are paired (a reply is matched with its request).
//
// The toxics stay until the cluster closes; faults come and go as watchers of the tap.

// WireToxic is the toxic type of a parsed stream.
const WireToxic = "lockchaos-wire"

// WireEvent is one message seen on a parsed link, before it is passed on.
type WireEvent struct {
	Client int
	Node   string
	// Reply is true for a message from the server to the client (a reply, or a push).
	Reply bool
	Msg   wire.Message
	// Req is, for a reply, the request it answers (zero for a push, or when it is not known).
	Req wire.Message
	// Conn numbers the link's connections from 1, in the order they were opened.
	Conn int64
}

// Name is the command an event concerns: a request's, or the request a reply answers.
func (e WireEvent) Name() string {
	if e.Reply {
		return e.Req.Cmd
	}
	return e.Msg.Cmd
}

// WireAction is what a watcher asks of a message.
type WireAction struct {
	// Hold, when not nil, keeps the message — and, as TCP would, everything behind it on its
	// stream — from its receiver until the channel is closed.
	Hold <-chan struct{}
	// Before runs once every hold on the message ended, just before it is handed on towards its
	// receiver: a time taken there is never later than the receiver's first sight of it (as a
	// time taken in After can be, the receiver having read it and gone on meanwhile).
	Before func()
	// After runs once the message has been handed on towards its receiver.
	After func()
}

// WireWatcher sees every message of a tap it watches, in the proxy's own goroutine: it must return
// at once (to wait, it returns a Hold).
type WireWatcher func(WireEvent) WireAction

// WireTap is the parsing point of one client's link to one node.
type WireTap struct {
	client int
	node   string
	proto  string // "resp" or "zookeeper"

	watchers atomic.Pointer[[]*watcherEntry]
	wmu      sync.Mutex

	mu      sync.Mutex
	pending *wireConn // a connection whose request stream started and whose reply stream has not
	conns   int64
}

type watcherEntry struct{ w WireWatcher }

// Client and Node name the tap's link.
func (t *WireTap) Client() int  { return t.client }
func (t *WireTap) Node() string { return t.node }

// Watch adds w to the tap until the returned function is called.
func (t *WireTap) Watch(w WireWatcher) (stop func()) {
	e := &watcherEntry{w}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	var cur []*watcherEntry
	if p := t.watchers.Load(); p != nil {
		cur = *p
	}
	next := append(append([]*watcherEntry(nil), cur...), e)
	t.watchers.Store(&next)
	return func() {
		t.wmu.Lock()
		defer t.wmu.Unlock()
		var rest []*watcherEntry
		for _, x := range *t.watchers.Load() {
			if x != e {
				rest = append(rest, x)
			}
		}
		t.watchers.Store(&rest)
	}
}

// observe shows e to every watcher and combines what they ask: every hold, before and after,
// appended to the stream's own lists (reused from message to message).
func (t *WireTap) observe(e WireEvent, s *wireStream) {
	p := t.watchers.Load()
	if p == nil {
		return
	}
	for _, x := range *p {
		a := x.w(e)
		if a.Hold != nil {
			s.holds = append(s.holds, a.Hold)
		}
		if a.Before != nil {
			s.befores = append(s.befores, a.Before)
		}
		if a.After != nil {
			s.afters = append(s.afters, a.After)
		}
	}
}

// wireConn pairs the two streams of one connection: the requests in flight, so that a reply is
// matched with the request it answers (Redis answers in order; ZooKeeper by xid).
type wireConn struct {
	n     int64
	proto string
	mu    sync.Mutex
	fifo  []wire.Message         // resp: fifo[head:] are in flight
	head  int                    // resp
	byXid map[int32]wire.Message // zookeeper
}

func (c *wireConn) sent(m wire.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proto == protoZooKeeper {
		if c.byXid == nil {
			c.byXid = map[int32]wire.Message{}
		}
		if m.Cmd != "connect" {
			c.byXid[m.Xid] = m
		}
		return
	}
	if c.head == len(c.fifo) { // none in flight (a lock's usual case): reuse the array
		clear(c.fifo)
		c.fifo, c.head = c.fifo[:0], 0
	}
	c.fifo = append(c.fifo, m)
}

func (c *wireConn) answered(m wire.Message) wire.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.Push {
		return wire.Message{}
	}
	if c.proto == protoZooKeeper {
		req, ok := c.byXid[m.Xid]
		if ok {
			delete(c.byXid, m.Xid)
		}
		return req
	}
	if c.head == len(c.fifo) {
		return wire.Message{}
	}
	req := c.fifo[c.head]
	c.fifo[c.head] = wire.Message{}
	c.head++
	return req
}

const (
	protoRESP      = "resp"
	protoZooKeeper = "zookeeper"
)

// ErrWireUnsupported is returned for a wire point on a link lockchaos does not parse.
var ErrWireUnsupported = errors.New("wire points unsupported")

// taps holds every tap of the process, by id: toxiproxy builds a toxic from its JSON attributes,
// so the toxic finds its tap by number.
var taps = struct {
	sync.Mutex
	next int64
	byID map[int64]*WireTap
}{byID: map[int64]*WireTap{}}

func registerTap(t *WireTap) int64 {
	taps.Lock()
	defer taps.Unlock()
	taps.next++
	taps.byID[taps.next] = t
	return taps.next
}

func unregisterTap(id int64) {
	taps.Lock()
	defer taps.Unlock()
	delete(taps.byID, id)
}

func tapByID(id int64) *WireTap {
	taps.Lock()
	defer taps.Unlock()
	return taps.byID[id]
}

// wireToxic parses one stream of a link. Its fields are its toxiproxy attributes.
type wireToxic struct {
	Tap   int64 `json:"tap"`
	Reply bool  `json:"reply"` // the server → client stream
}

func init() { toxics.Register(WireToxic, new(wireToxic)) }

// NewState starts a connection's stream. Toxiproxy starts a connection's request stream, then its
// reply stream, one connection after another in the proxy's accept loop, each calling NewState
// before any byte flows: so the reply stream's state pairs with the request stream's just made.
func (w *wireToxic) NewState() any {
	t := tapByID(w.Tap)
	if t == nil {
		return &wireStream{raw: true}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &wireStream{tap: t, reply: w.Reply}
	if !w.Reply {
		t.conns++
		s.conn = &wireConn{n: t.conns, proto: t.proto}
		t.pending = s.conn
	} else {
		s.conn, t.pending = t.pending, nil
		if s.conn == nil { // a reply stream without its request stream: shown unpaired
			t.conns++
			s.conn = &wireConn{n: t.conns, proto: t.proto}
		}
	}
	s.framer = newFramer(t.proto, w.Reply)
	return s
}

func newFramer(proto string, reply bool) wire.Framer {
	switch {
	case proto == protoZooKeeper && reply:
		return wire.NewZKReplies()
	case proto == protoZooKeeper:
		return wire.NewZKRequests()
	case reply:
		return wire.NewRESPReplies()
	}
	return wire.NewRESPRequests()
}

// wireStream is one direction of one connection: the bytes not yet cut into a whole message, and
// a message that waits for its hold (kept across toxiproxy's interrupts, which restart Pipe).
//
// The bytes are handed on without a copy: a chunk that came in is ours (toxiproxy's reader copies
// what it reads into a new chunk, and a toxic before this one passes chunks on, or slices of
// them), so the messages handed on are slices of it, and a chunk that is exactly the messages
// handed on at once — one request or one reply, a lock's usual chunk — goes on as it came. buf is
// always capped at its length when it is a chunk's bytes, so appending the next chunk to a partial
// message copies it into an array of the stream's own, never into the bytes behind it.
type wireStream struct {
	tap    *WireTap
	conn   *wireConn
	reply  bool
	framer wire.Framer
	raw    bool // not (or no longer) parsed: bytes pass as they come
	buf    []byte
	ts     time.Time
	// chunk is the chunk that came in while buf is exactly its bytes, nil otherwise.
	chunk *stream.StreamChunk

	held    []byte
	holds   []<-chan struct{}
	befores []func()
	afters  []func()
}

// Pipe passes whole messages on, each after the tap's watchers saw it and any hold they asked for
// ended. Bytes of a message not yet complete wait for the rest of it (they would not be acted on
// by the server before it anyway).
func (w *wireToxic) Pipe(stub *toxics.ToxicStub) {
	s, ok := stub.State.(*wireStream)
	if !ok { // toxiproxy runs stateful toxics with their state; be safe anyway
		new(toxics.NoopToxic).Pipe(stub)
		return
	}
	if !s.release(stub) || !s.drain(stub) {
		return
	}
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				if len(s.buf) > 0 { // a partial message at the close: the receiver gets what came
					stub.Output <- &stream.StreamChunk{Data: s.buf, Timestamp: s.ts}
					s.buf = nil
				}
				stub.Close()
				return
			}
			s.ts = c.Timestamp
			if s.raw {
				stub.Output <- c
				continue
			}
			if len(s.buf) == 0 {
				s.buf, s.chunk = c.Data[:len(c.Data):len(c.Data)], c
			} else {
				s.buf, s.chunk = append(s.buf, c.Data...), nil
			}
			if !s.drain(stub) {
				return
			}
		}
	}
}

// drain passes on every whole message in the buffer, each after the watchers saw it. Messages no
// watcher asked anything of (no hold, no after) go on together with the next one that is handed
// on, in one chunk: a message with afters ends such a run (the run goes on, then its afters run),
// a held one goes on alone once its holds ended, after the run before it. It returns false when
// interrupted while a message waits for its hold.
func (s *wireStream) drain(stub *toxics.ToxicStub) bool {
	ready := 0 // buf[:ready]: seen by the watchers, nothing asked, not handed on yet
	for !s.raw && ready < len(s.buf) {
		n, m, err := s.framer.Next(s.buf[ready:])
		if err != nil {
			s.raw = true // not the protocol (or lost sync): pass the rest through unparsed
			break
		}
		if n == 0 {
			if len(s.buf)-ready > maxPartial {
				s.raw = true // a message this large is no lock's command: stop holding it back
			}
			break
		}
		e := WireEvent{Client: s.tap.client, Node: s.tap.node, Reply: s.reply, Msg: m, Conn: s.conn.n}
		if s.reply {
			e.Req = s.conn.answered(m)
		} else {
			s.conn.sent(m)
		}
		s.holds, s.befores, s.afters = s.holds[:0], s.befores[:0], s.afters[:0]
		s.tap.observe(e, s)
		if len(s.holds) == 0 {
			s.runBefores() // it goes on with the run it joins, before any later message can
			ready += n
			if len(s.afters) > 0 {
				s.handOn(stub, ready)
				ready = 0
				s.runAfters()
			}
			continue
		}
		s.handOn(stub, ready) // the run before it goes on: only this one is held
		s.held = s.take(n)
		ready = 0
		if !s.release(stub) {
			return false
		}
	}
	if s.raw {
		ready = len(s.buf)
	}
	s.handOn(stub, ready)
	return true
}

// handOn passes buf[:n] on in one chunk (the chunk that came in, when that is all of it).
func (s *wireStream) handOn(stub *toxics.ToxicStub, n int) {
	if n == 0 {
		return
	}
	if s.chunk != nil && n == len(s.buf) {
		c := s.chunk
		s.buf, s.chunk = nil, nil
		stub.Output <- c
		return
	}
	stub.Output <- &stream.StreamChunk{Data: s.take(n), Timestamp: s.ts}
}

// take removes buf[:n] from the buffer and returns it, capped at its length (nothing appends to
// it: the receiver reads it while the stream goes on).
func (s *wireStream) take(n int) []byte {
	b := s.buf[:n:n]
	s.buf, s.chunk = s.buf[n:], nil
	if len(s.buf) == 0 {
		s.buf = nil
	}
	return b
}

// runBefores runs the befores of the message about to be handed on, and forgets them.
func (s *wireStream) runBefores() {
	for i, f := range s.befores {
		s.befores[i] = nil
		f()
	}
	s.befores = s.befores[:0]
}

// runAfters runs the afters of the message just handed on, and forgets them.
func (s *wireStream) runAfters() {
	afters := s.afters
	for i, f := range afters {
		afters[i] = nil
		f()
	}
	s.afters = afters[:0]
}

// release passes the waiting message on once every hold on it ended, then runs its afters. It
// returns false when interrupted first; the message keeps waiting in the state.
func (s *wireStream) release(stub *toxics.ToxicStub) bool {
	if s.held == nil {
		return true
	}
	for len(s.holds) > 0 {
		select {
		case <-s.holds[0]:
			s.holds[0] = nil
			s.holds = s.holds[1:]
		case <-stub.Interrupt:
			return false
		}
	}
	s.runBefores()
	stub.Output <- &stream.StreamChunk{Data: s.held, Timestamp: s.ts}
	s.held = nil
	s.runAfters()
	return true
}

// maxPartial bounds the bytes a stream keeps back while a message is incomplete.
const maxPartial = 1 << 20

// addWireTaps puts the wire toxics on a new client link's proxy, before any client connects.
func (ps *proxies) addWireTaps(k linkKey, kind Kind) error {
	proto := wireProto(kind)
	if proto == "" {
		return nil
	}
	p, _, ok := ps.get(k)
	if !ok {
		return fmt.Errorf("no proxy for client %d → %s", k.client, k.node)
	}
	t := &WireTap{client: k.client, node: k.node, proto: proto}
	id := registerTap(t)
	for _, reply := range []bool{false, true} {
		streamName, name := "upstream", "lockchaos-wire-requests"
		if reply {
			streamName, name = "downstream", "lockchaos-wire-replies"
		}
		err := embeddedLink{p}.AddToxic(context.Background(), name, WireToxic, streamName, map[string]any{"tap": id, "reply": reply})
		if err != nil {
			unregisterTap(id)
			return fmt.Errorf("parse the link client %d → %s: %w", k.client, k.node, err)
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.taps == nil {
		ps.taps = map[linkKey]*WireTap{}
	}
	ps.taps[k] = t
	ps.tapIDs = append(ps.tapIDs, id)
	return nil
}

// WireTap returns the tap of client cl's link to node (Spec.Wire), or an error wrapping
// ErrWireUnsupported naming why there is none.
func (c *topo) WireTap(cl int, node string) (*WireTap, error) {
	n, err := c.node(node)
	if err != nil {
		return nil, err
	}
	switch {
	case c.rp != nil:
		return nil, fmt.Errorf("%w: the external backend's proxies are remote toxiproxy-servers, which cannot parse a protocol (wire points need the local or docker backend)", ErrWireUnsupported)
	case !c.spec.Proxies || !c.spec.Wire:
		return nil, fmt.Errorf("%w: the cluster was started without parsing its links (Spec.Wire)", ErrWireUnsupported)
	case wireProto(n.Kind) == "":
		return nil, fmt.Errorf("%w: lockchaos does not parse %s's protocol (etcd speaks gRPC over HTTP/2: not parsed until measured as cheap)", ErrWireUnsupported, n.Kind)
	}
	c.px.mu.Lock()
	defer c.px.mu.Unlock()
	t, ok := c.px.taps[linkKey{cl, node}]
	if !ok {
		return nil, fmt.Errorf("no link from client %d to %s (clients are 1..%d)", cl, node, c.spec.Clients)
	}
	return t, nil
}
