package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/external" // Spec.Backend "external" (and its run ids)
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
)

var errCrashed = faults.ErrCrashed

// HistoryFile is the name of the history in a run directory.
const HistoryFile = "history.jsonl"

// ServersDir is the run directory's folder of server logs, one <node>.log each, as the servers
// wrote them during the run (the last MiB of each; none on the external backend).
const ServersDir = "servers"

// historyFlush is how often the recorder's queued events are written to the history.
const historyFlush = 5 * time.Millisecond

// Result says where a run's history is and what was planned.
type Result struct {
	Dir         string
	HistoryPath string
	Schedule    []faults.Planned
	Elapsed     time.Duration
	// ClusterStart is how long the servers took to come up.
	ClusterStart time.Duration
	// Stopped is why the run ended its fault phase early (Config.Decide's answer), or "".
	Stopped string
}

// Run runs one experiment and records its history in cfg.Dir. It returns an error only when the
// run could not be carried out (bad config wraps ErrBadConfig; missing servers wrap
// cluster.ErrMissingBinary); what the lock did is in the history, for the checker.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, info, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: cfg.Dir, HistoryPath: filepath.Join(cfg.Dir, HistoryFile)}

	spec := cluster.Spec{
		Topology: cfg.Topology, Nodes: cfg.Nodes, Backend: cfg.Backend, Clients: cfg.Clients,
		Proxies: cfg.Proxies == ProxyAlways || (cfg.Proxies == ProxyAuto && len(cfg.Faults) > 0),
		Log:     cfg.Log, External: cfg.external,
		RedisImage: cfg.RedisImage, ZooKeeperImage: cfg.ZooKeeperImage, PostgresImage: cfg.PostgresImage, MariaDBImage: cfg.MariaDBImage, EtcdImage: cfg.EtcdImage,
		SessionIdleTimeout: cfg.ServerIdleTimeout,
	}
	deaths := &serverDeaths{}
	spec.OnExit = deaths.exited
	// Links are parsed in every run with faults (docs/design.md#wire-points): for the faults that act
	// at a command, and so that every grant a client claims is checked against the replies it
	// got (history.Operation.Unbacked). A run without faults (proxies always: the benchmarks'
	// floor) is parsed only when a benchmark asks.
	spec.Wire = spec.Proxies && (benchWire || len(cfg.Faults) > 0)
	if cfg.external != nil {
		// Someone else's servers: the run's keys and znodes carry its id, as its proxies do.
		spec.RunID = external.NewRunID()
		cfg.lockPrefix = cluster.ProxyPrefix + spec.RunID + "-"
	}
	// redis-cluster: "master" is the master of the lock's slot.
	spec.LockKey = cfg.lockPrefix + "lock"
	t0 := time.Now()
	cl, err := cluster.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	res.ClusterStart = time.Since(t0)
	// Only now: a run refused for bad input (a missing server, an unreachable node) leaves no
	// directory behind.
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("make run directory: %w", err)
	}

	meta := history.Meta{
		Algorithm: cfg.Algorithm, Scenario: cfg.Scenario, Topology: cfg.Topology, Backend: cfg.Backend,
		Seed: cfg.Seed, Clients: cfg.Clients, TTLNs: int64(cfg.TTL), HoldNs: int64(cfg.Hold),
		Fencing: cfg.Fencing, Expected: cfg.Expected, StuckAfterNs: int64(cfg.StuckAfter),
		SessionTimeoutNs: int64(cfg.SessionTimeout), ServerIdleTimeoutNs: int64(cfg.ServerIdleTimeout), Faults: plannedFaults(cfg.Faults, cfg.TTL, info.RenewalPeriod(cfg.TTL)),
		Started: time.Now().UTC().Format(time.RFC3339Nano), Version: cfg.Version, Command: cfg.Command,
	}
	w, err := history.Create(res.HistoryPath, meta)
	if err != nil {
		return nil, err
	}
	// Clients queue their events and a flusher encodes and writes them in batches: the recorder
	// stays off the lock's critical path. A SIGKILL of the harness loses the events of the last
	// historyFlush, 5 ms (more only while the flusher goroutine is not scheduled, as in a stall
	// of the whole harness); their operations then read as unfinished:
	// unknown outcomes, never false verdicts. Fault boundaries are written and synced at once.
	w.FlushEvery(historyFlush)
	if benchObserve != nil && !benchNoRecord {
		w.Subscribe(benchObserve)
	}
	rec := &recorder{w: w, base: time.Now()}
	if cfg.Decide != nil {
		rec.decider = &decider{decide: cfg.Decide, meta: meta}
		w.Subscribe(rec.decider.observe)
	}
	err = run(ctx, cfg, info, cl, rec, res, deaths)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if p := rec.err.Load(); err == nil && p != nil {
		err = *p
	}
	res.Elapsed = time.Since(rec.base)
	// Closing the cluster removes the servers' own files: what they said goes with the history,
	// once that is safe on disk.
	if lerr := cl.SaveLogs(filepath.Join(cfg.Dir, ServersDir)); lerr != nil && cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "lockchaos: %v (the run itself is complete)\n", lerr)
	}
	return res, err
}

func run(ctx context.Context, cfg Config, info algorithms.Info, cl cluster.Cluster, rec *recorder, res *Result, deaths *serverDeaths) error {
	env := &env{cluster: cl, cfg: cfg, clocks: make([]*skewClock, cfg.Clients+1), renews: info.RenewalPeriod(cfg.TTL)}
	for i := range env.clocks {
		env.clocks[i] = &skewClock{}
	}
	nem, err := faults.New(env, cfg.Faults, faults.Options{
		Seed: cfg.Seed, Record: rec.fault, Now: rec.now, Duration: cfg.Duration,
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	res.Schedule = nem.Schedule()

	clients, err := newClients(cfg, info, cl, env, nem, rec)
	if err != nil {
		return err
	}
	defer closeAll(clients)
	for _, c := range clients {
		env.lockers = append(env.lockers, c.locker)
	}

	defer rec.watchWire(cl, cfg.Clients)() // records nothing where no link is parsed
	runCtx, stopClients := context.WithCancel(ctx)
	defer stopClients()
	if err := nem.Start(runCtx); err != nil {
		nem.HealAll()
		return err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		watchStalls(runCtx, rec)
	}()
	var panicked error
	var panicOnce sync.Once
	fail := func(err error) {
		panicOnce.Do(func() {
			panicked = err
			// The history says the run was cut short, and why: its check (lockchaos check DIR
			// as much as this run's) judges what was recorded, but proves no safety with it.
			rec.write(history.Event{Type: history.TypeAbort, Error: err.Error()}, true)
			if serr := rec.w.Sync(); serr != nil {
				rec.fail(serr)
			}
			stopClients()
		})
	}
	// A server that dies by itself (a crash of its own, not a fault's kill) ends the run: from
	// then on the clients meet a dead server, which would read as the lock's failure (stuck).
	// Once the run stopped decided, what follows cannot change its verdict, and nor can a death.
	unheard := deaths.listen(func(node, line string) {
		fail(fmt.Errorf("%s, not by a fault: the run ends there, as what follows would show the server's failure, not the lock's (its log: %s)",
			line, filepath.Join(ServersDir, node+".log")))
	})
	defer unheard()
	for _, c := range clients {
		c.fatal = fail // a client that broke its protocol (algorithms.ErrBroken) ends the run
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				// A panic in a lock's code (a user's Locker under locktest) ends the run, not
				// the process: the servers are stopped and what was recorded is kept.
				if p := recover(); p != nil {
					fail(fmt.Errorf("client %d panicked: %v", c.id, p))
				}
			}()
			c.run(runCtx)
		}()
	}
	// Fault phase, then every fault healed, then the liveness window; or, once the verdict can
	// no longer change (Config.Decide), a stop line, every fault healed and a short tail.
	if rec.decider == nil {
		sleep(runCtx, cfg.Duration)
		nem.Finish(runCtx)
		nem.HealAll()
		nem.RecordUnfired()
		_ = rec.w.Sync()
		sleep(runCtx, cfg.Tail)
		writesDue(runCtx, clients, cfg.Hold+max(cfg.OpTimeout, time.Second))
	} else {
		phase := time.Now()
		stop := func(verdict, why string) {
			unheard()
			rec.write(history.Event{Type: history.TypeStop, Name: verdict, Detail: why}, true)
			res.Stopped = verdict + ": " + why
		}
		late := func() string {
			return overdue(clients, nem.HeldSince, time.Now(), rec.since)
		}
		verdict, why := rec.decider.wait(runCtx, phase.Add(cfg.Duration), late)
		if verdict != "" {
			stop(verdict, why)
			nem.StopEarly()
		} else {
			nem.Finish(runCtx)
		}
		nem.HealAll()
		nem.RecordUnfired()
		_ = rec.w.Sync()
		if verdict == "" {
			if verdict, why = rec.decider.wait(runCtx, phase.Add(cfg.Duration+cfg.Tail), late); verdict != "" {
				stop(verdict, why)
			}
		}
		if verdict != "" {
			sleep(runCtx, decidedTail)
		} else {
			writesDue(runCtx, clients, cfg.Hold+max(cfg.OpTimeout, time.Second))
		}
	}
	stopClients()
	if !waitFor(&wg, answerGrace) {
		// A client still in a call of its Locker that long after the run ended stopped
		// answering: the run proves nothing of it (its goroutine is left to the process's end).
		if err := notAnswering(rec, clients, rec.since); err != nil {
			return err
		}
		wg.Wait()
	}
	if panicked != nil {
		return panicked
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// writesDue waits, at the end of an undecided run, until no client is in its critical section,
// for at most bound (a hold and a request): the write of a holder granted late in the tail is
// the evidence of a fault whose danger window it was granted in, and a run that ended before it
// came would be unknown for want of a write the lock was about to make (a correct etcd lock in
// partition: granted at 1.4 s under a hold of 2.5 s, its write at 3.9 s came after a run of
// 3.5 s). The danger window reaches that write (checker: a write under a grant made inside it).
func writesDue(ctx context.Context, clients []*client, bound time.Duration) {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if !slices.ContainsFunc(clients, func(c *client) bool { return c.inSection.Load() && !c.dead() }) {
			return
		}
		if !sleep(ctx, 10*time.Millisecond) {
			return
		}
	}
}

// waitFor waits for wg at most d; it reports whether wg was done.
func waitFor(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// plannedFaults is the meta line's record of the scenario's faults.
// A fault sized in leases is planned at the run's TTL; each occurrence is sized when it fires.
func plannedFaults(specs []faults.Spec, ttl, renews time.Duration) []history.PlannedFault {
	out := make([]history.PlannedFault, len(specs))
	for i, s := range specs {
		m := faults.MeaningOf(s)
		out[i] = history.PlannedFault{Kind: s.Kind, Point: s.Point, Client: s.Client, AtNs: int64(s.At),
			ForNs: int64(s.For.Resolve(ttl, renews)), EveryNs: int64(s.Every), Times: s.Times,
			Clients: s.Clients, Nodes: s.Nodes, Setup: s.Setup, Wire: s.Wire.String(),
			ActsOn: m.ActsOn, Lasting: m.Lasting}
	}
	return out
}

// newClients builds every client's Locker on its own endpoints, clock, named-point hook and
// seeded random source; they share the one resource.
func newClients(cfg Config, info algorithms.Info, cl cluster.Cluster, env *env, nem *faults.Nemesis, rec *recorder) ([]*client, error) {
	shared := &resource{fencing: cfg.Fencing}
	clockMoves := slices.ContainsFunc(cfg.Faults, func(s faults.Spec) bool {
		return faults.MeaningOf(s).ActsOn == history.ActsOnClock
	})
	clients := make([]*client, cfg.Clients)
	for i := range clients {
		id := i + 1
		ep := cl.Endpoints(id)
		name := "lock"
		if cfg.LockPerClient {
			name = fmt.Sprintf("lock-%d", id)
		}
		name = cfg.lockPrefix + name
		acfg := algorithms.Config{
			Client: id, Topology: cfg.Topology, Name: name, TTL: cfg.TTL, Addrs: ep.Addrs, Dial: ep.Dial, Routes: ep.Routes,
			SessionTimeout: cfg.SessionTimeout, OpTimeout: cfg.OpTimeout, Clock: env.clocks[id], ClockMoves: clockMoves,
			Point: func(ctx context.Context, name string) error { return nem.Point(ctx, id, name) },
			Rand:  rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(id))), Dir: cfg.Dir,
		}
		acfg.Cluster, acfg.MultiHost = ep.Cluster, ep.MultiHost
		if ep.MasterName != "" {
			acfg.Sentinel = &algorithms.SentinelConfig{MasterName: ep.MasterName, Addrs: ep.SentinelAddrs}
		}
		if ep.SQL != nil {
			l := algorithms.SQLLogin(*ep.SQL)
			acfg.SQL = &l
		}
		if ep.Kube != nil {
			k := algorithms.KubeAccess(*ep.Kube)
			acfg.Kube = &k
		}
		locker, err := info.New(acfg)
		if err != nil {
			closeAll(clients)
			return nil, fmt.Errorf("client %d: %s: %w", id, cfg.Algorithm, err)
		}
		clients[i] = &client{id: id, lock: acfg.Name, locker: locker, clock: acfg.Clock, point: acfg.Point,
			rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(1000+id))), rec: rec,
			res: shared, w: cfg.Workload, leases: &env.leases, crashed: func() bool { return nem.Crashed(id) }}
	}
	for _, c := range clients {
		if s, ok := c.locker.(algorithms.Starter); ok {
			if err := s.Ready(context.Background()); err != nil {
				closeAll(clients)
				return nil, fmt.Errorf("client %d: %s: %w", c.id, cfg.Algorithm, err)
			}
		}
	}
	return clients, nil
}

func closeAll(clients []*client) {
	for _, c := range clients {
		if c == nil {
			continue
		}
		if cl, ok := c.locker.(algorithms.Closer); ok {
			_ = cl.Close()
		}
	}
}

// env is what the faults act on.
type env struct {
	cluster cluster.Cluster
	cfg     Config
	clocks  []*skewClock
	lockers []algorithms.Locker // by client, from 0
	leases  leaseSeen           // the longest lease a client reported
	renews  time.Duration       // the lock's background renewal period (algorithms.Info.RenewalPeriod)
}

// leaseSeen is the longest lease (Lease.TTL) any client reported so far.
type leaseSeen struct{ ns atomic.Int64 }

// saw notes a lease a client was granted.
func (l *leaseSeen) saw(ttl time.Duration) {
	for {
		cur := l.ns.Load()
		if int64(ttl) <= cur || l.ns.CompareAndSwap(cur, int64(ttl)) {
			return
		}
	}
}

// Lease is the lease the lock holds as far as the run knows: the longest a client reported so far,
// else the run's TTL (faults.Env).
func (e *env) Lease() time.Duration {
	if d := time.Duration(e.leases.ns.Load()); d > 0 {
		return d
	}
	return e.cfg.TTL
}

// Renews is the lock's background renewal period (faults.Env).
func (e *env) Renews() time.Duration { return e.renews }

// Locker returns client c's Locker (nil for an unknown client), for faults on process clients.
func (e *env) Locker(c int) algorithms.Locker {
	if c < 1 || c > len(e.lockers) {
		return nil
	}
	return e.lockers[c-1]
}

func (e *env) Cluster() cluster.Cluster { return e.cluster }
func (e *env) Clients() int             { return e.cfg.Clients }
func (e *env) TTL() time.Duration       { return e.cfg.TTL }

// KeyPattern is the glob of the run's own keys for faults that walk a server's keys (clock-jump):
// on the external backend only the run's prefix, never someone else's keys.
func (e *env) KeyPattern() string { return e.cfg.lockPrefix + "*" }

// SetClock moves client c's clock (the one the harness hands its Locker), and the Locker's own
// when it keeps one (algorithms.ClockSetter: a process client, through libfaketime); a Locker
// whose clock could not be moved has broken its run (process.Locker says why).
func (e *env) SetClock(c int, offset time.Duration, rate float64) {
	if c >= 1 && c < len(e.clocks) {
		e.clocks[c].set(offset, rate)
	}
	if cs, ok := e.Locker(c).(algorithms.ClockSetter); ok {
		_ = cs.SetClock(offset, rate)
	}
}

// serverDeaths hands the death of a server by itself (cluster.Spec.OnExit) to the run, once it
// listens; one before that is kept for it, and one after it stopped listening (the run stopped
// decided, or ended) is no longer the run's.
type serverDeaths struct {
	mu         sync.Mutex
	node, line string                  // the first death before the run listened
	on         func(node, line string) // the run's handler while it listens
}

func (d *serverDeaths) exited(node, line string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.on != nil:
		d.on(node, line)
	case d.line == "":
		d.node, d.line = node, line
	}
}

// listen hands every death from now on to on (one kept from before at once), until the
// returned stop.
func (d *serverDeaths) listen(on func(node, line string)) (stop func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.line != "" {
		on(d.node, d.line)
	}
	d.on = on
	return func() {
		d.mu.Lock()
		d.on = nil
		d.mu.Unlock()
	}
}
