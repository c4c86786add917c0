package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/wire"
	"github.com/lockchaos/lockchaos/history"
)

// Wire aims a fault at one of the lock's own commands as it crosses the client's link
// (docs/design.md#wire-points): the proxies parse Redis's and ZooKeeper's protocols, so the fault reaches any lock — a
// built-in, a user's Go lock, a process client in any language — without a named point in its
// code.
//
// A wire fault fires at the first message that matches (after Skip matches; with Point, at the
// first match on the client's links after it reached the point, Skip counting points), and holds
// that message — and what follows it on its stream, in order, as TCP would — until it heals:
//
//   - latency: for Amount;
//   - partition, partition-oneway: for For, or until Until; the fault's own partition acts on its
//     targets meanwhile (a hold of the client's links from that command on);
//   - client-pause: a client in a process of its own is stopped (SIGSTOP) for For, and the message
//     then delivered into its socket, where it waits until the process wakes — a reply that
//     arrived as a GC pause began; a client in the harness's process cannot be stopped from
//     outside, so its message is held for For instead — what a process that stalls sees.
//
// Until ends the hold early when a client other than the trigger reaches that harness point
// (cs:before-read: "until another client holds the lock with a lease it found valid"): the moment
// a late command does harm, and no sooner, whatever the lock's retry timing.
type Wire struct {
	// Before matches a request on its way to the server ("DEL", "SET NX", "delete", "*" for any
	// command of the lock — not the connection's housekeeping).
	Before string `yaml:"before,omitempty" json:"before,omitempty"`
	// AfterReply matches the reply to such a request on its way to the client.
	AfterReply string `yaml:"after-reply,omitempty" json:"after-reply,omitempty"`
	// OK, with AfterReply, matches only replies that succeeded (true: not an error, a null or the
	// integer 0 — the SET NX that won, the DEL that deleted) or only those that did not (false).
	OK *bool `yaml:"ok,omitempty" json:"ok,omitempty"`
	// Until ends the hold when another client reaches this harness point (e.g. cs:before-read).
	Until string `yaml:"until,omitempty" json:"until,omitempty"`
	// Each holds every matching message on the trigger's links until the heal, not only the
	// first: a quorum lock's every reply (a slow majority). With Point, the arm lasts until the
	// client's next harness point, and a match after a heal fires again (Times allowing): every
	// attempt of a retrying acquire.
	Each bool `yaml:"each,omitempty" json:"each,omitempty"`
}

// String says what the wire point matches, as history lines and reports show it.
func (w *Wire) String() string {
	if w == nil {
		return ""
	}
	var b strings.Builder
	if w.Before != "" {
		b.WriteString("before " + w.Before)
	} else {
		b.WriteString("after the reply to " + w.AfterReply)
		if w.OK != nil {
			if *w.OK {
				b.WriteString(" (succeeded)")
			} else {
				b.WriteString(" (failed)")
			}
		}
	}
	if w.Each {
		b.WriteString(", every one")
	}
	if w.Until != "" {
		b.WriteString(", until another client reaches " + w.Until)
	}
	return b.String()
}

// wireActor is a Kind that can fire at a wire point (Spec.Wire). The occurrence holds the
// matched message for at most wireBound; atWire puts the kind's own effect in place meanwhile.
type wireActor interface {
	// wireBound is how long the matched message is held at most.
	wireBound(s Spec) Size
	// stopsFirst reports whether the effect must be in place before the message is delivered,
	// and the message then goes on at once (a process stopped as a reply reaches it).
	stopsFirst(env Env, client int) bool
	// atWire applies the kind's effect to t beyond the hold (nil heal: nothing more).
	atWire(ctx context.Context, env Env, t Target) (Heal, error)
}

func (latency) wireBound(s Spec) Size                             { return s.Amount }
func (latency) stopsFirst(Env, int) bool                          { return false }
func (latency) atWire(context.Context, Env, Target) (Heal, error) { return nil, nil }
func (partition) wireBound(s Spec) Size                           { return s.For }
func (partition) stopsFirst(Env, int) bool                        { return false }
func (p partition) atWire(ctx context.Context, env Env, t Target) (Heal, error) {
	return p.Inject(ctx, env, t) // the client's links held (or cut) from that command on
}

// client-pause at a wire point: a client in a process of its own is stopped (SIGSTOP) and the
// message then delivered into its socket, where it waits until the process wakes — a reply that
// arrived as a GC pause began; its connections stay as they are (the OS keeps a stopped process's
// connections; nothing is silenced). A client in the harness's process cannot be stopped from
// outside: its message is held instead, what a process that stalls sees.
func (clientPause) wireBound(s Spec) Size { return s.For }
func (clientPause) stopsFirst(env Env, c int) bool {
	_, ok := lockerOf(env, c).(algorithms.Pauser)
	return ok
}
func (clientPause) atWire(_ context.Context, env Env, t Target) (Heal, error) {
	return pauseProcesses(env, t.Clients)
}

// client-crash at a wire point: the client dies as the matched message reaches it (docs/design.md#faults-sized-to-the-lease)
// — between two commands of any lock, SETNX and its EXPIRE. Its links are cut and a client in a
// process of its own is killed (SIGKILL) before the message goes on; a client in the harness's
// process never runs another step (Nemesis.Crashed). It never ends: no bound, no end line.
func (clientCrash) wireBound(Spec) Size      { return Size{} }
func (clientCrash) stopsFirst(Env, int) bool { return true }
func (k clientCrash) atWire(ctx context.Context, env Env, t Target) (Heal, error) {
	return k.Inject(ctx, env, t)
}

func (w *Wire) validate(s Spec) error {
	if (w.Before == "") == (w.AfterReply == "") {
		return fmt.Errorf("fault %s: wire needs exactly one of before (a request) or after-reply (a reply), e.g. wire: {before: DEL}", s.Kind)
	}
	if w.OK != nil && w.AfterReply == "" {
		return fmt.Errorf("fault %s: wire ok is only meaningful with after-reply", s.Kind)
	}
	if _, err := w.pattern(); err != nil {
		return fmt.Errorf("fault %s: wire: %w", s.Kind, err)
	}
	a, ok := kinds[s.Kind].(wireActor)
	if !ok {
		return fmt.Errorf("fault %s cannot act at a wire point (use one of %s)", s.Kind, strings.Join(wireKindNames(), ", "))
	}
	if f, forever := a.(Forever); (!forever || !f.Forever()) && !a.wireBound(s).positive() {
		return fmt.Errorf("fault %s at a wire point: how long the command is held at most must be > 0 (for; amount for latency)", s.Kind)
	}
	return nil
}

// wireKindNames lists the kinds that can act at a wire point.
func wireKindNames() []string {
	var out []string
	for _, n := range KindNames() {
		if _, ok := kinds[n].(wireActor); ok {
			out = append(out, n)
		}
	}
	return out
}

func (w *Wire) pattern() (wire.Pattern, error) {
	p := w.Before
	if p == "" {
		p = w.AfterReply
	}
	return wire.ParsePattern(p)
}

// match reports whether e is a message the wire point names.
func (w *Wire) match(p wire.Pattern, e cluster.WireEvent) bool {
	if w.Before != "" {
		return !e.Reply && p.Match(e.Msg)
	}
	if !e.Reply || e.Msg.Push || !p.Match(e.Req) {
		return false
	}
	if w.OK != nil {
		succeeded := !e.Msg.Err && !e.Msg.Null && !e.Msg.Zero
		return succeeded == *w.OK
	}
	return true
}

// wireRule is the wire side of a rule: its pattern, the clients armed by its point, and the
// occurrences in force (each holding its messages until it heals).
type wireRule struct {
	pat    wire.Pattern
	mu     sync.Mutex
	armed  map[int]bool
	active map[int]*wireOccurrence // by trigger client
}

// wireOccurrence is one firing of a wire fault: the gate its held messages wait on.
type wireOccurrence struct {
	id      int64
	trigger int
	until   string
	gate    chan struct{}
	once    sync.Once
}

func (o *wireOccurrence) open() { o.once.Do(func() { close(o.gate) }) }

// startWire makes every wire rule watch the parsed links of every client. It runs in Start,
// before clients run; the watchers go at HealAll.
func (n *Nemesis) startWire(ctx context.Context) error {
	c := n.env.Cluster()
	for _, r := range n.rules {
		if r.spec.Wire == nil {
			continue
		}
		pat, err := r.spec.Wire.pattern()
		if err != nil {
			return err
		}
		r.wire = &wireRule{pat: pat, armed: map[int]bool{}, active: map[int]*wireOccurrence{}}
		var taps []*cluster.WireTap
		var lastErr error
		for cl := 1; cl <= n.env.Clients(); cl++ {
			if r.spec.Point == "" && r.spec.Client != 0 && r.spec.Client != cl {
				continue
			}
			for _, nd := range c.Nodes() {
				tap, err := c.WireTap(cl, nd.Name)
				if err != nil {
					lastErr = err // a node whose protocol is not parsed: others may be
					continue
				}
				taps = append(taps, tap)
			}
		}
		if len(taps) == 0 {
			return fmt.Errorf("fault %s at a wire point: no parsed link: %w", r.spec.Kind, lastErr)
		}
		for _, tap := range taps {
			stop := tap.Watch(func(e cluster.WireEvent) cluster.WireAction { return n.onWire(ctx, r, e) })
			n.mu.Lock()
			n.unwatch = append(n.unwatch, stop)
			n.mu.Unlock()
		}
	}
	return nil
}

// onWire is a wire rule's watcher: it runs in the proxy's goroutine, so it decides at once and
// leaves every slow step (an injection, a heal) to goroutines of its own.
func (n *Nemesis) onWire(ctx context.Context, r *rule, e cluster.WireEvent) cluster.WireAction {
	w := r.wire
	if !r.spec.Wire.match(w.pat, e) {
		return cluster.WireAction{}
	}
	w.mu.Lock()
	if o := w.active[e.Client]; o != nil && r.spec.Wire.Each {
		w.mu.Unlock()
		return cluster.WireAction{Hold: o.gate}
	}
	fire := false
	if r.spec.Point != "" {
		fire = w.armed[e.Client]
		if !r.spec.Wire.Each { // Each: the arm holds every match until the client's next step
			delete(w.armed, e.Client)
		}
	} else if n.due(r) {
		r.mu.Lock()
		r.seen++
		fire = r.seen > r.spec.Skip
		r.mu.Unlock()
	}
	if fire {
		r.mu.Lock()
		fire = r.spec.times() < 0 || r.fired < r.spec.times()
		if fire {
			r.fired++
		}
		r.mu.Unlock()
	}
	if !fire {
		w.mu.Unlock()
		return cluster.WireAction{}
	}
	n.mu.Lock()
	stopped := n.stopped
	n.mu.Unlock()
	if stopped {
		w.mu.Unlock()
		return cluster.WireAction{}
	}
	o := &wireOccurrence{id: n.nextID.Add(1), trigger: e.Client, until: r.spec.Wire.Until, gate: make(chan struct{})}
	w.active[e.Client] = o
	w.mu.Unlock()
	n.hold(e.Client, +1)

	spec := n.sized(r.spec)
	t, err := resolve(ctx, n.env, spec, e.Client, 0)
	if r.spec.Clients == "" {
		t.Clients = []int{e.Client} // a wire fault acts on the client whose command it caught
	}
	detail := wireDetail(spec, e)
	began := n.now()
	actor := r.kind.(wireActor) // Validate made sure
	act := cluster.WireAction{Hold: o.gate}
	inPlace := make(chan struct{})
	if actor.stopsFirst(n.env, e.Client) {
		act = cluster.WireAction{Hold: inPlace} // delivered once the effect is in place
	}
	inject := func() {
		var heal Heal
		begun := err == nil
		if begun {
			r.begin()
			heal, err = actor.atWire(ctx, n.env, t)
		}
		if f, ok := r.kind.(Forever); ok && f.Forever() {
			// A crash: the client is dead before the message reaches it, and stays so; its
			// links stay cut (no heal, no end line), as a crash at a point leaves them.
			if err == nil {
				n.crash(e.Client)
			}
			close(inPlace)
			n.started(r, o.id, t, detail, began, begun, err)
			if err != nil {
				n.record(history.Event{Phase: history.PhaseEnd, Fault: o.id, Error: errString(err)})
			}
			return
		}
		close(inPlace)
		n.started(r, o.id, t, detail, began, begun, err)
		lasting := actor.wireBound(spec).D()
		// The occurrence ends at its time, at its Until, or at HealAll, whichever comes first;
		// the heal (if any) comes before the held messages go, so they arrive after it.
		end := func(h Heal) Heal {
			return func(ctx context.Context) error {
				var herr error
				if h != nil {
					herr = h(ctx)
				}
				w.mu.Lock()
				if w.active[o.trigger] == o {
					delete(w.active, o.trigger)
				}
				w.mu.Unlock()
				o.open()
				n.hold(o.trigger, -1)
				return herr
			}
		}
		n.keepFor(o.id, end(heal), lasting)
	}
	// What the occurrence must bring about is noted now, before another client's point can end
	// it (wireArm), not once the injection returns.
	n.aim(o.id, r.spec, o.until)
	go inject()
	return act
}

// wireArm is called at every named point a client reaches: it arms the wire rules whose point it
// is (Skip and Times as for any point), disarms the client's other arms (an arm lasts until the
// client's next step of the critical section: a point of the harness's, "cs:…"; the points a lock
// marks inside its own acquire or release do not end it), and ends the holds whose Until another
// client just reached.
func (n *Nemesis) wireArm(c int, name string) {
	for _, r := range n.rules {
		w := r.wire
		if w == nil {
			continue
		}
		var ended []*wireOccurrence
		w.mu.Lock()
		if r.spec.Point != "" && strings.HasPrefix(name, "cs:") {
			delete(w.armed, c)
		}
		for _, o := range w.active {
			if o.until == name && o.trigger != c {
				ended = append(ended, o)
			}
		}
		w.mu.Unlock()
		for _, o := range ended {
			n.reached(o.id)
			n.end(o.id, nil)
		}
		if r.spec.Point != name || (r.spec.Client != 0 && r.spec.Client != c) || !n.due(r) {
			continue
		}
		r.mu.Lock()
		r.seen++
		arm := r.seen > r.spec.Skip && (r.spec.times() < 0 || r.fired < r.spec.times())
		r.mu.Unlock()
		if arm {
			w.mu.Lock()
			w.armed[c] = true
			w.mu.Unlock()
		}
	}
}

// wireDetail says what the fault did at which command, for the history's fault line.
func wireDetail(s Spec, e cluster.WireEvent) string {
	what := "the request " + e.Msg.Text
	if e.Reply {
		what = "the reply " + e.Msg.Text + " to " + e.Req.Text
	}
	act := "held " + what
	if f, ok := kinds[s.Kind].(Forever); ok && f.Forever() {
		return fmt.Sprintf("on %s: crashed the client as %s reached it", e.Node, what)
	}
	if d, ok := kinds[s.Kind].(Describer); ok {
		act += " (" + d.Describe(Target{Spec: s}) + ")"
	}
	bound := kinds[s.Kind].(wireActor).wireBound(s).D()
	if s.Wire.Until != "" {
		return fmt.Sprintf("on %s: %s until another client reached %s (at most %s)", e.Node, act, s.Wire.Until, bound)
	}
	return fmt.Sprintf("on %s: %s for %s", e.Node, act, bound)
}
