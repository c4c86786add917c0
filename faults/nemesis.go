package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// ErrCrashed is returned at a named point to a client that a client-crash fault stopped for good.
var ErrCrashed = errors.New("lockchaos: client crashed by fault")

// Options configure a Nemesis.
type Options struct {
	// Seed drives every random choice, so the same seed gives the same schedule.
	Seed int64
	// Record receives the fault lines of the history (start and end of each occurrence).
	Record func(history.Event)
	// Now is the run's monotonic clock, in ns since the run's start.
	Now func() int64
	// Duration is the fault phase's length, for planning timed faults.
	Duration time.Duration
}

// Nemesis fires a scenario's faults: timed ones on their schedule, event-triggered ones when a client
// reaches their point. Every occurrence is recorded; every lasting fault is healed by its duration
// or by HealAll.
type Nemesis struct {
	env   Env
	opt   Options
	rules []*rule
	plan  []Planned

	nextID  atomic.Int64
	mu      sync.Mutex
	healing map[int64]Heal // lasting faults not yet healed, by occurrence id
	// timed are the occurrences in force that end by themselves (their For), by id: when their
	// For runs out. left is closed, and replaced, each time one ends (Finish waits on it).
	timed   map[int64]time.Time
	left    chan struct{}
	stopped bool
	early   bool          // the run stopped once decided (StopEarly)
	stop    chan struct{} // closed by HealAll: lasting faults stop waiting for their For
	unwatch []func()      // the wire rules' watchers (wire.go), removed by HealAll
	untils  []*untilWait  // blocking faults waiting for another client's point (Spec.Until)
	// aims are the occurrences in force that must bring something about (reach their until
	// point, outlast the lease), by id: their end line says what they missed (history.Event.Missed).
	aims map[int64]*aim
	// held counts, by client, the occurrences holding it now (stopped at a point, crashed, a
	// command of its held on the wire); heldAt is when one last let it go (HeldSince).
	held   map[int]int
	heldAt map[int]time.Time
	// crashed are the clients a client-crash at a wire point killed: they never run another
	// step (Crashed; their points return ErrCrashed).
	crashed map[int]bool
	wg      sync.WaitGroup
	cancel  context.CancelFunc
}

type rule struct {
	index int // 1-based, as history lines name it (Event.Rule)
	spec  Spec
	kind  Kind
	mu    sync.Mutex
	seen  int
	fired int
	// injected counts occurrences that took effect; lastErr is the last injection's error;
	// injecting counts injections under way (a restart takes seconds, and may outlast the phase).
	injected  int
	injecting int
	lastErr   string
	wire      *wireRule // a fault at a wire point (Spec.Wire), from Start
}

// Planned is one timed occurrence, decided before the run from the seed.
type Planned struct {
	At    time.Duration
	Rule  int    // index of the spec
	Kind  string // the spec's kind
	Pick  uint64 // the random draw used by "random" selectors
	Extra time.Duration
}

// New validates specs and plans the timed faults.
func New(env Env, specs []Spec, opt Options) (*Nemesis, error) {
	n := &Nemesis{env: env, opt: opt, healing: map[int64]Heal{}, stop: make(chan struct{}),
		timed: map[int64]time.Time{}, left: make(chan struct{}), aims: map[int64]*aim{},
		held: map[int]int{}, heldAt: map[int]time.Time{}, crashed: map[int]bool{}}
	for i, s := range specs {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("fault %d: %w", i+1, err)
		}
		if err := checkClients(s.Clients, env.Clients()); err != nil {
			return nil, fmt.Errorf("fault %d: fault %s: %w", i+1, s.Kind, err)
		}
		if s.Client > env.Clients() {
			return nil, fmt.Errorf("fault %d: fault %s: client is %d, but the run has clients 1..%d", i+1, s.Kind, s.Client, env.Clients())
		}
		n.rules = append(n.rules, &rule{index: i + 1, spec: s, kind: kinds[s.Kind]})
	}
	n.plan = Plan(specs, opt.Seed, opt.Duration)
	return n, nil
}

// Plan computes the timed occurrences of specs over a run of the given duration. It is a pure
// function of its arguments: the same seed gives the same schedule.
func Plan(specs []Spec, seed int64, d time.Duration) []Planned {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6c6f636b6368616f))
	var out []Planned
	for i, s := range specs {
		if s.Point != "" || s.Wire != nil {
			continue
		}
		for k, at := 0, s.At.D(); s.times() < 0 || k < s.times(); k, at = k+1, at+s.Every.D() {
			if at > d || (k > 0 && s.Every == 0) {
				break
			}
			p := Planned{At: at, Rule: i, Kind: s.Kind, Pick: rng.Uint64()}
			if s.Jitter > 0 {
				p.Extra = time.Duration(rng.Int64N(int64(s.Jitter)))
			}
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].At < out[b].At })
	return out
}

// Schedule returns the planned timed occurrences.
func (n *Nemesis) Schedule() []Planned { return n.plan }

// Start arms the faults that need it, fires the timed faults due at 0, and starts the rest of the
// timed schedule. Call it before clients run.
func (n *Nemesis) Start(ctx context.Context) error {
	ctx, n.cancel = context.WithCancel(ctx)
	for _, r := range n.rules {
		a, ok := r.kind.(Armer)
		if !ok {
			continue
		}
		id := n.nextID.Add(1)
		heal, err := a.Arm(ctx, n.env, r.spec)
		// The arming is a field of the line (arm); the name keeps its old ":arm" for the eye.
		armed := MeaningOf(r.spec)
		armed.Arm, armed.Lasting = true, false
		n.record(history.Event{Phase: history.PhaseStart, Fault: id, Rule: r.index, Name: r.spec.Kind + ":arm",
			Target: r.spec.Nodes, Detail: "prepared before clients start", Error: errString(err), FaultMeaning: armed})
		if err != nil {
			n.record(history.Event{Phase: history.PhaseEnd, Fault: id, Error: errString(err)})
			return fmt.Errorf("arm %s: %w", r.spec.Kind, err)
		}
		n.keep(id, heal)
	}
	if err := n.startWire(ctx); err != nil {
		return err
	}
	start := time.Now()
	for _, p := range n.plan {
		if p.At == 0 {
			// Faults at 0 are the scenario's setup (a partition that shapes who reaches which
			// node): they are in force before the first client runs.
			n.fire(ctx, n.rules[p.Rule], 0, p.Pick, p.Extra)
			continue
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			t := time.NewTimer(time.Until(start.Add(p.At)))
			defer t.Stop()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			n.fire(ctx, n.rules[p.Rule], 0, p.Pick, p.Extra)
		}()
	}
	return nil
}

// Point is the clients' named-point hook: it fires the faults triggered by client c reaching point
// name, and holds the client there while a blocking fault lasts. It returns ErrCrashed to a crashed
// client once ctx ends, ctx's error when ctx ended during a pause, and nil otherwise.
func (n *Nemesis) Point(ctx context.Context, c int, name string) error {
	if n.Crashed(c) {
		return ErrCrashed // dead since a reply reached it: no step of its own any more
	}
	n.reachedUntil(c, name)
	n.wireArm(c, name)
	// Every rule this occurrence triggers is claimed before the first is injected: two faults
	// at one point (a session kill and a stall at cs:acquired) hit the same client, even when
	// another client reaches the point while the first fault is being injected. An occurrence
	// takes one blocking fault at most (a client is stopped once at a time): further pauses at
	// the point are left for the next clients that reach it (getset-race's four stopped waiters).
	var claimed []*rule
	blocked := false
	for _, r := range n.rules {
		if r.spec.Wire != nil || r.spec.Point != name || (r.spec.Client != 0 && r.spec.Client != c) || !n.due(r) {
			continue
		}
		blocks := isBlocker(r.kind)
		r.mu.Lock()
		r.seen++
		fire := r.seen > r.spec.Skip && (r.spec.times() < 0 || r.fired < r.spec.times()) && !(blocks && blocked)
		if fire {
			r.fired++
		}
		r.mu.Unlock()
		if fire {
			claimed = append(claimed, r)
			blocked = blocked || blocks
		}
	}
	for i, r := range claimed {
		if err := n.fire(ctx, r, c, 0, 0); err != nil {
			// The client crashed or its ctx ended under a blocking fault: the rules it claimed
			// after that one are given back, for another client's point.
			for _, later := range claimed[i+1:] {
				later.mu.Lock()
				later.seen--
				later.fired--
				later.mu.Unlock()
			}
			return err
		}
	}
	// A point where no fault stopped the client is a no-op, even when ctx has ended: the
	// algorithm's own checks decide what a late step means, and an algorithm that treats a point
	// error as a crash must not leave its state behind for a mere timeout.
	return nil
}

// fire injects one occurrence. For a blocking kind it holds the caller (the triggering client).
func (n *Nemesis) fire(ctx context.Context, r *rule, trigger int, pick uint64, extra time.Duration) error {
	n.mu.Lock()
	stopped := n.stopped
	n.mu.Unlock()
	if stopped {
		return nil
	}
	// Sized now, against the lease the lock holds as far as the run knows (docs/design.md#faults-sized-to-the-lease).
	spec := n.sized(r.spec)
	t, err := resolve(ctx, n.env, spec, trigger, pick)
	id := n.nextID.Add(1)
	detail := ""
	if d, ok := r.kind.(Describer); ok && err == nil {
		detail = d.Describe(t)
	}
	if spec.Until != "" && err == nil {
		detail = strings.TrimPrefix(detail+", "+untilDetail(spec), ", ")
	}
	var heal Heal
	// The start line carries the moment injection began: a restart or a failover takes a while,
	// and what the clients did meanwhile happened under the fault.
	began, injecting := n.now(), time.Now()
	begun := err == nil
	if begun {
		r.begin()
		heal, err = r.kind.Inject(ctx, n.env, t)
	}
	if err == nil {
		n.aim(id, r.spec, spec.Until)
	}
	n.started(r, id, t, detail, began, begun, err)
	if err != nil {
		n.record(history.Event{Phase: history.PhaseEnd, Fault: id, Error: errString(err)})
		return nil // a failed fault is recorded, and the run goes on
	}
	lasting := spec.For.D() + extra
	if isBlocker(r.kind) {
		n.hold(trigger, +1)
		if f, ok := r.kind.(Forever); ok && f.Forever() {
			// A crash never ends: no end line is written, so the checker sees a client that died
			// for good, and its links stay cut until the cluster is closed. Restoring them would
			// revive what a dead process cannot (a ZooKeeper session its library still holds).
			// It stays held.
			<-ctx.Done()
			return ErrCrashed
		}
		defer n.hold(trigger, -1)
		// A stopped process does not see its deadlines pass: the pause lasts its full time even
		// when the caller's ctx (an acquire's timeout) ends meanwhile, and only HealAll cuts it.
		// The caller then finds its ctx ended, as a process finds after it wakes.
		until, forget := n.awaitUntil(spec.Until, trigger, spec.AtLeast.D())
		n.serve(id, lasting)
		select {
		case <-n.stop:
		case <-time.After(lasting):
		case <-until:
			n.reached(id)
		}
		forget()
		if heal == nil {
			heal = func(context.Context) error { return nil } // end writes the line only for a heal
		}
		n.end(id, heal)
		return ctx.Err()
	}
	if heal == nil {
		n.record(history.Event{Phase: history.PhaseEnd, Fault: id, Missed: n.late(r.kind, spec, time.Since(injecting))})
		return nil
	}
	n.keepFor(id, heal, lasting) // lasting 0: until HealAll
	if spec.Until != "" {
		n.healAtUntil(id, spec, trigger)
	}
	return nil
}

// hold counts one more (d = +1) or one fewer (-1) occurrence holding client c.
func (n *Nemesis) hold(c int, d int) {
	if c == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.held[c] += d
	if d < 0 {
		n.heldAt[c] = time.Now()
	}
}

// crash marks client c dead for good (a client-crash at a wire point): held, and Crashed.
func (n *Nemesis) crash(c int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.crashed[c] {
		n.crashed[c] = true
		n.held[c]++
	}
}

// Crashed reports whether a client-crash at a wire point killed client c: the harness runs no
// further step of it and records nothing more of it (its call under way stays open, as a dead
// process leaves it), whatever its Locker returns.
func (n *Nemesis) Crashed(c int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.crashed[c]
}

// HeldSince reports whether a fault held client c — stopped it at a point, crashed it, held a
// command of its on the wire — at any moment since t: what it did not answer meanwhile was the
// fault's doing, not the client's.
func (n *Nemesis) HeldSince(c int, t time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.held[c] > 0 || n.heldAt[c].After(t)
}

// sized is s resolved against the lock's lease and renewal period as the run knows them now.
func (n *Nemesis) sized(s Spec) Spec { return s.Sized(n.env.Lease(), n.env.Renews()) }

// aim is what an occurrence in force must bring about: another client at its until point, a
// length past the lease it was sized to outlast.
type aim struct {
	until   string
	reached bool
	outlast bool
	began   time.Time
}

// aim notes what occurrence id of spec s (its until point until, "" for none) must bring about,
// for its end line; nothing for an occurrence that need not.
func (n *Nemesis) aim(id int64, s Spec, until string) {
	if until == "" && !s.outlasts() {
		return
	}
	n.mu.Lock()
	n.aims[id] = &aim{until: until, outlast: s.outlasts(), began: time.Now()}
	n.mu.Unlock()
}

// reached notes that occurrence id ends because another client reached its until point.
func (n *Nemesis) reached(id int64) {
	n.mu.Lock()
	if a := n.aims[id]; a != nil {
		a.reached = true
	}
	n.mu.Unlock()
}

// outlastNs is the lease (and renewal period) an occurrence of s must outlast, as the run knows
// it now, for its start line; 0 for a fault not sized to outlast it.
func (n *Nemesis) outlastNs(s Spec) int64 {
	if !s.outlasts() {
		return 0
	}
	return int64(n.env.Lease() + n.env.Renews())
}

// missed says what occurrence id, ending now, did not bring about ("" when nothing), and forgets
// its aim. Call it with n.mu held.
func (n *Nemesis) missed(id int64) string {
	a := n.aims[id]
	if a == nil {
		return ""
	}
	delete(n.aims, id)
	lasted := time.Since(a.began)
	var out []string
	if a.until != "" && !a.reached {
		out = append(out, fmt.Sprintf("no other client reached %s in the %s it lasted: its cap or the fault phase ran out first",
			a.until, lasted.Round(time.Millisecond)))
	}
	if need := n.env.Lease() + n.env.Renews(); a.outlast && lasted < need {
		out = append(out, fmt.Sprintf("it lasted %s, less than the lease it must outlast (%s)",
			lasted.Round(time.Millisecond), need))
	}
	return strings.Join(out, "; ")
}

// late says what an occurrence of a WithinLease kind at a point missed when it took took: as long
// as the lease of the holder it aims at, or longer, so that no grant after it could be illegal (a
// container's restart beside make test's packages can take 5 s, against the restart scenario's
// 4 s lease). "" when it was in time, or need not be.
func (n *Nemesis) late(k Kind, s Spec, took time.Duration) string {
	w, ok := k.(WithinLease)
	if !ok || !w.WithinLease() || s.Point == "" {
		return ""
	}
	// Only where the lease is the server's memory of a key (a restart forgets it); a quorum that
	// keeps its data (ZooKeeper, etcd) has nothing to forget, whenever the member comes back.
	if t, err := cluster.LookupTopology(n.env.Cluster().Topology()); err != nil || !t.Has(cluster.TraitKeyExpiry) {
		return ""
	}
	if lease := n.env.Lease(); lease > 0 && took >= lease {
		return fmt.Sprintf("it took %s, as long as the lease of the holder it aims at (%s) or longer: the server came back "+
			"after the lock it was to forget could have expired", took.Round(time.Millisecond), lease)
	}
	return ""
}

// isBlocker reports whether k holds its client at the point while it lasts.
func isBlocker(k Kind) bool {
	b, ok := k.(Blocker)
	return ok && b.Blocks()
}

// healAtUntil ends lasting occurrence id early when a client other than trigger reaches s.Until
// (once s.AtLeast has passed); it stops watching once the occurrence ended otherwise.
func (n *Nemesis) healAtUntil(id int64, s Spec, trigger int) {
	until, forget := n.awaitUntil(s.Until, trigger, s.AtLeast.D())
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		forget()
		return
	}
	n.wg.Add(1) // under n.mu while not stopped: before HealAll's Wait
	n.mu.Unlock()
	go func() {
		defer n.wg.Done()
		defer forget()
		for {
			n.mu.Lock()
			_, alive := n.healing[id]
			left := n.left
			n.mu.Unlock()
			if !alive {
				return
			}
			select {
			case <-n.stop: // HealAll takes over
				return
			case <-until:
				n.reached(id)
				n.end(id, nil)
				return
			case <-left: // some occurrence ended: this one, by its For?
			}
		}
	}()
}

// begin counts an injection under way; started, told it was begun, ends it.
func (r *rule) begin() {
	r.mu.Lock()
	r.injecting++
	r.mu.Unlock()
}

// started records the start line of occurrence id of rule r (injection began at began, and was
// counted by begin when begun; err is the injection's error) and counts it as taken effect, or not.
func (n *Nemesis) started(r *rule, id int64, t Target, detail string, began int64, begun bool, err error) {
	e := history.Event{Phase: history.PhaseStart, Fault: id, Rule: r.index, Name: r.spec.Kind,
		Target: describeTarget(t), Point: r.spec.Point, Detail: detail, Error: errString(err), AtNs: began,
		FaultMeaning: meaning(r.kind, t)}
	if err == nil {
		e.OutlastNs = n.outlastNs(r.spec)
	}
	n.record(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	if begun {
		r.injecting--
	}
	if err != nil {
		r.lastErr = err.Error()
	} else {
		r.injected++
	}
}

func (n *Nemesis) keep(id int64, heal Heal) { n.keepFor(id, heal, 0) }

// keepFor keeps heal for HealAll and, with lasting > 0, heals after lasting. A fault that was
// injected while HealAll ran (a timer or a point racing the end of the fault phase) is healed at
// once: HealAll has taken its list already, and would leave it in force for good.
func (n *Nemesis) keepFor(id int64, heal Heal, lasting time.Duration) {
	if heal == nil {
		heal = func(context.Context) error { return nil }
	}
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		n.end(id, heal)
		return
	}
	defer n.mu.Unlock()
	n.healing[id] = heal
	if lasting > 0 {
		n.timed[id] = time.Now().Add(lasting)
		n.wg.Add(1) // under n.mu while not stopped: before HealAll's Wait
		// Not ctx: a point's ctx may end right after the point (Acquire's timeout), and the fault
		// must still last For, not until HealAll.
		go func() {
			defer n.wg.Done()
			select {
			case <-n.stop: // HealAll takes over
			case <-time.After(lasting):
				n.end(id, nil)
			}
		}()
	}
}

// end heals occurrence id (given heal, or the kept one) and records its end, once.
func (n *Nemesis) end(id int64, heal Heal) {
	n.mu.Lock()
	kept, ok := n.healing[id]
	if ok {
		heal = kept
		delete(n.healing, id)
	}
	if _, ok := n.timed[id]; ok {
		delete(n.timed, id)
		close(n.left)
		n.left = make(chan struct{})
	}
	missed := ""
	if ok || heal != nil {
		missed = n.missed(id)
	}
	n.mu.Unlock()
	if !ok && heal == nil {
		return // HealAll and the For timer raced: the other one healed it and wrote the end
	}
	var err error
	if heal != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = heal(ctx)
		cancel()
	}
	n.record(history.Event{Phase: history.PhaseEnd, Fault: id, Error: errString(err), Missed: missed})
}

// serve counts blocking occurrence id in force until its For (lasting) runs out, for Finish.
func (n *Nemesis) serve(id int64, lasting time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.stopped {
		n.timed[id] = time.Now().Add(lasting)
	}
}

// Finish waits, at the end of the fault phase and before HealAll, until every occurrence in
// force that ends by itself (its For, or its Until) has ended: a fault that fired late in the
// phase serves its whole For, as planned, instead of being cut short by HealAll (a client-pause
// of 2 s that fired at 0.5 s of a 2 s phase, on a loaded machine, lasted 1.5 s, no session
// expired, and the run was safe). It waits no longer than the latest planned end of those in
// force when it is called, nor past ctx; occurrences that start meanwhile are HealAll's.
func (n *Nemesis) Finish(ctx context.Context) {
	n.mu.Lock()
	var last time.Time
	for _, end := range n.timed {
		if end.After(last) {
			last = end
		}
	}
	n.mu.Unlock()
	if last.IsZero() {
		return
	}
	deadline := time.NewTimer(time.Until(last))
	defer deadline.Stop()
	for {
		n.mu.Lock()
		left, pending := n.left, false
		for _, end := range n.timed {
			pending = pending || !end.After(last)
		}
		n.mu.Unlock()
		if !pending {
			return
		}
		select {
		case <-left:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// StopEarly marks the fault phase as ended before its time because the run's verdict was
// decided: the faults that never fired say so (Unfired). Call it before HealAll.
func (n *Nemesis) StopEarly() {
	n.mu.Lock()
	n.early = true
	n.mu.Unlock()
}

// HealAll stops the schedule, heals every fault still in force and records their ends. Clients
// held by a blocking fault are released when their own context ends.
func (n *Nemesis) HealAll() {
	n.mu.Lock()
	if !n.stopped {
		close(n.stop)
	}
	n.stopped = true
	ids := make([]int64, 0, len(n.healing))
	for id := range n.healing {
		ids = append(ids, id)
	}
	n.mu.Unlock()
	if n.cancel != nil {
		n.cancel()
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	for _, id := range ids {
		n.end(id, nil)
	}
	n.mu.Lock()
	unwatch := n.unwatch
	n.unwatch = nil
	n.mu.Unlock()
	for _, stop := range unwatch {
		stop()
	}
	n.wg.Wait()
}

// record writes a fault line, stamped now unless e carries its own time.
func (n *Nemesis) record(e history.Event) {
	e.Type = history.TypeFault
	if e.AtNs == 0 {
		e.AtNs = n.now()
	}
	if n.opt.Record != nil {
		n.opt.Record(e)
	}
}

// due reports whether r, a fault at a point or a wire point, watches for it yet: from its At on.
func (n *Nemesis) due(r *rule) bool {
	return r.spec.At == 0 || n.opt.Now == nil || n.opt.Now() >= int64(r.spec.At)
}

func (n *Nemesis) now() int64 {
	if n.opt.Now != nil {
		return n.opt.Now()
	}
	return 0
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func describeTarget(t Target) string {
	var parts []string
	if len(t.Clients) > 0 {
		cs := make([]string, len(t.Clients))
		for i, c := range t.Clients {
			cs[i] = "client-" + strconv.Itoa(c)
		}
		parts = append(parts, strings.Join(cs, ","))
	}
	if len(t.Nodes) > 0 {
		parts = append(parts, strings.Join(t.Nodes, ","))
	}
	return strings.Join(parts, " → ")
}

// untilDetail says when a fault with Until ends early, for its history line.
func untilDetail(s Spec) string {
	d := "until another client reached " + s.Until
	if !s.AtLeast.IsZero() {
		d = fmt.Sprintf("at least %s, then %s", s.AtLeast, d)
	}
	if !s.For.IsZero() {
		d += fmt.Sprintf(" (at most %s)", s.For)
	}
	return d
}

// untilWait is a fault that ends when a client other than its trigger reaches point.
type untilWait struct {
	point   string
	trigger int
	done    chan struct{}
}

// awaitUntil returns a channel closed when a client other than trigger reaches point once
// atLeast has passed (nil, never ready, when there is no point to wait for), and the function
// that forgets the wait once the fault ended otherwise.
func (n *Nemesis) awaitUntil(point string, trigger int, atLeast time.Duration) (<-chan struct{}, func()) {
	if point == "" {
		return nil, func() {}
	}
	w := &untilWait{point: point, trigger: trigger, done: make(chan struct{})}
	listen := func() {
		n.mu.Lock()
		n.untils = append(n.untils, w)
		n.mu.Unlock()
	}
	forget := func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.untils = slices.DeleteFunc(n.untils, func(x *untilWait) bool { return x == w })
	}
	if atLeast <= 0 {
		listen()
		return w.done, forget
	}
	// The wait joins the list only once atLeast has passed: a point reached before then does
	// not count. A timer, stopped when the fault ends first, so nothing is left behind.
	var mu sync.Mutex
	forgotten := false
	t := time.AfterFunc(atLeast, func() {
		mu.Lock()
		defer mu.Unlock()
		if !forgotten {
			listen()
		}
	})
	return w.done, func() {
		t.Stop()
		mu.Lock()
		forgotten = true
		mu.Unlock()
		forget()
	}
}

// reachedUntil ends the waits for point of every client but c.
func (n *Nemesis) reachedUntil(c int, point string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	kept := n.untils[:0]
	for _, w := range n.untils {
		if w.point == point && w.trigger != c {
			close(w.done)
			continue
		}
		kept = append(kept, w)
	}
	n.untils = kept
}
