package harness_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// run runs cfg and checks its history; a missing server skips the test unless CI requires them.
func run(t *testing.T, cfg harness.Config) *checker.Result {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := harness.Run(ctx, cfg)
	if errors.Is(err, cluster.ErrMissingBinary) {
		testenv.MissingServer(t, err)
	}
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	h, err := history.ReadFile(res.HistoryPath)
	if err != nil {
		t.Fatalf("read history: %v", err)
	}
	out := checker.CheckHistory(h, checker.Options{})
	return &out.Result
}

// TestBaselineSafe runs every seed algorithm without faults against real servers: hundreds of
// critical sections, no exclusion violation, no lost update.
func TestBaselineSafe(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	for _, alg := range []string{"setnx", "setnx-expire", "setnx-px", "getset", "token", "redlock", "zookeeper"} {
		t.Run(alg, func(t *testing.T) {
			r := run(t, harness.Config{Algorithm: alg, Scenario: "baseline", Seed: 1,
				Duration: 3 * time.Second, Workload: harness.Workload{Clients: 5, TTL: time.Second,
					SessionTimeout: 2 * time.Second, Hold: time.Millisecond, Think: time.Millisecond}})
			t.Logf("%s: %d acquires, %.0f cs/s, p50 %.2f ms, p99 %.2f ms", alg, r.AcquiresOk,
				r.ThroughputCSPerS, r.AcquireLatencyMs.P50, r.AcquireLatencyMs.P99)
			if r.Verdict != checker.Safe {
				t.Errorf("verdict %s, want safe (first violation %+v)", r.Verdict, r.FirstViolation)
			}
			// Enough critical sections to have contended (the safe verdict needs grants to two
			// clients at least); how many is the benchmarks' business, not a timed assertion here:
			// under -race on a loaded 2-core runner redlock does a few hundred.
			if r.AcquiresOk < 50 {
				t.Errorf("only %d acquisitions in 3s, want dozens at least", r.AcquiresOk)
			}
			if r.ExclusionViolations != 0 || r.LostUpdates != 0 || r.ServiceViolations != 0 {
				t.Errorf("exclusion %d, lost %d, service %d: want all 0",
					r.ExclusionViolations, r.LostUpdates, r.ServiceViolations)
			}
		})
	}
}

// twoHolders is a deliberately broken lock that lets two clients hold it at once.
type twoHolders struct{ sem chan struct{} }

func (l *twoHolders) Acquire(ctx context.Context) (algorithms.Lease, error) {
	select {
	case l.sem <- struct{}{}:
		return algorithms.Lease{}, nil
	case <-ctx.Done():
		return algorithms.Lease{}, ctx.Err()
	}
}

func (l *twoHolders) Release(context.Context, algorithms.Lease) error {
	<-l.sem
	return nil
}

var registerBroken sync.Once

// TestBrokenLockerCaught proves the harness and the exclusion check can fail: a lock that admits
// two holders must be reported unsafe, with overlapping windows and lost updates.
func TestBrokenLockerCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	shared := &twoHolders{sem: make(chan struct{}, 2)}
	registerBroken.Do(func() {
		algorithms.Register(algorithms.Info{Name: "test-two-holders", Summary: "admits two holders",
			Topologies: []string{cluster.RedisSingle},
			New:        func(algorithms.Config) (algorithms.Locker, error) { return shared, nil }})
	})
	r := run(t, harness.Config{Algorithm: "test-two-holders", Scenario: "broken", Seed: 3,
		Duration: time.Second, Workload: harness.Workload{Clients: 4, Hold: 2 * time.Millisecond}})
	if r.Verdict != checker.Unsafe {
		t.Fatalf("verdict %s, want unsafe", r.Verdict)
	}
	if r.ExclusionViolations == 0 || r.FirstViolation == nil {
		t.Errorf("exclusion violations %d, first %+v: want the overlap reported", r.ExclusionViolations, r.FirstViolation)
	}
	// The lock itself granted a held lock: the service class.
	if r.ServiceViolations == 0 || r.ViolationClass == nil || *r.ViolationClass != checker.ServiceClass {
		t.Errorf("service violations %d, class %v: want the illegal grants classed as service", r.ServiceViolations, r.ViolationClass)
	}
	if r.LostUpdates == 0 {
		t.Errorf("no lost update from two concurrent read-increment-write holders")
	}
}

// TestHistoryRecordsEveryOperation checks the history's shape: a meta line, the clients' events in
// time order, every operation an invocation with one completion (or none only while the run
// ends), critical-section operations tied to an acquire.
func TestHistoryRecordsEveryOperation(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	dir := t.TempDir()
	run(t, harness.Config{Algorithm: "token", Scenario: "baseline", Seed: 9, Dir: dir,
		Duration: 500 * time.Millisecond, Workload: harness.Workload{Clients: 3}})
	h, err := history.ReadFile(filepath.Join(dir, harness.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if h.Meta.Algorithm != "token" || h.Meta.Clients != 3 || h.Meta.Seed != 9 || h.Meta.TTLNs == 0 {
		t.Errorf("meta %+v", h.Meta)
	}
	ops := history.Operations(h.Events)
	acquires := map[int64]bool{}
	var last int64
	for _, e := range h.Events {
		if e.Type == history.TypeFault {
			continue // a harness-stall span is written when it ends, stamped with its start
		}
		if e.AtNs < last {
			t.Fatalf("event at %d before its predecessor at %d: the clients' events are stamped as they are written, in time order", e.AtNs, last)
		}
		last = e.AtNs
	}
	for _, o := range ops {
		switch o.Op {
		case history.OpAcquire:
			if o.Ok() {
				acquires[o.ID] = true
			}
		case history.OpRead, history.OpWrite, history.OpRelease:
			if !acquires[o.Acq] {
				t.Errorf("%s %d runs under acquire %d, which is not a granted acquire", o.Op, o.ID, o.Acq)
			}
		}
		if o.Done == history.Never {
			t.Errorf("operation %d (%s) has no completion although no client crashed", o.ID, o.Op)
		}
	}
	if len(acquires) < 10 {
		t.Errorf("only %d acquisitions", len(acquires))
	}
	if b, err := os.ReadFile(filepath.Join(dir, harness.ServersDir, "redis-1.log")); err != nil || !strings.Contains(string(b), "Ready to accept connections") {
		t.Errorf("the run directory's %s/redis-1.log: %v, %q; want the server's log", harness.ServersDir, err, b)
	}
}

func TestBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  harness.Config
	}{
		{"unknown algorithm", harness.Config{Algorithm: "nope", Dir: "x"}},
		{"wrong topology", harness.Config{Algorithm: "token", Topology: cluster.ZooKeeper, Dir: "x"}},
		{"negative clients", harness.Config{Algorithm: "token", Workload: harness.Workload{Clients: -1}, Dir: "x"}},
		{"no dir", harness.Config{Algorithm: "token"}},
		{"bad proxy mode", harness.Config{Algorithm: "token", Proxies: "sometimes", Dir: "x"}},
		{"negative acquire timeout", harness.Config{Algorithm: "token", Workload: harness.Workload{AcquireTimeout: -time.Second}, Dir: "x"}},
		{"negative release timeout", harness.Config{Algorithm: "token", Workload: harness.Workload{ReleaseTimeout: -time.Second}, Dir: "x"}},
		{"negative op timeout", harness.Config{Algorithm: "token", Workload: harness.Workload{OpTimeout: -time.Second}, Dir: "x"}},
		{"negative tail", harness.Config{Algorithm: "token", Tail: -time.Second, Dir: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := harness.Run(context.Background(), tc.cfg)
			if !errors.Is(err, harness.ErrBadConfig) {
				t.Errorf("err = %v, want ErrBadConfig", err)
			}
		})
	}
}

// panicky is a lock whose Acquire panics on its third call.
type panicky struct {
	mu    sync.Mutex
	calls int
}

func (l *panicky) Acquire(ctx context.Context) (algorithms.Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if l.calls == 3 {
		panic("boom")
	}
	return algorithms.Lease{}, nil
}

func (l *panicky) Release(context.Context, algorithms.Lease) error { return nil }

var registerPanicky sync.Once

// TestPanicInLockEndsRunCleanly: a panic in a lock's code becomes the run's error; the servers are
// stopped and the history written so far is kept and readable.
func TestPanicInLockEndsRunCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	lock := &panicky{}
	registerPanicky.Do(func() {
		algorithms.Register(algorithms.Info{Name: "test-panicky", Topologies: []string{cluster.RedisSingle},
			New: func(algorithms.Config) (algorithms.Locker, error) { return lock, nil }})
	})
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	res, err := harness.Run(context.Background(), harness.Config{Algorithm: "test-panicky", Scenario: "panic",
		Dir: dir, Duration: 5 * time.Second, Workload: harness.Workload{Clients: 1}})
	if errors.Is(err, cluster.ErrMissingBinary) {
		testenv.MissingServer(t, err)
	}
	if err == nil || !strings.Contains(err.Error(), "panicked: boom") {
		t.Fatalf("err = %v, want the panic as the run's error", err)
	}
	if res == nil || res.Elapsed > 4*time.Second {
		t.Errorf("the run went on after the panic (result %+v)", res)
	}
	h, rerr := history.ReadFile(filepath.Join(dir, harness.HistoryFile))
	if rerr != nil || len(h.Events) < 4 {
		t.Fatalf("history after the panic: %v, %d events", rerr, len(h.Events))
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 0 {
		t.Errorf("the run left %d entries in TMPDIR (servers' directories not removed)", len(entries))
	}
}

// serverKiller is a correct lock (a mutex in the test's process) whose killAt-th Acquire shuts the
// Redis server down, as a crash of the server's own would end it: not a fault of the run.
type serverKiller struct {
	addr   string
	held   chan struct{} // a token while the lock is held
	mu     sync.Mutex
	calls  int
	killAt int
}

// shutdown ends the server as no fault does.
func (l *serverKiller) shutdown(ctx context.Context) {
	rc := redis.NewClient(&redis.Options{Addr: l.addr})
	_ = rc.Do(ctx, "SHUTDOWN", "NOSAVE").Err() // the connection ends with the server
	_ = rc.Close()
}

func (l *serverKiller) Acquire(ctx context.Context) (algorithms.Lease, error) {
	l.mu.Lock()
	l.calls++
	kill := l.calls == l.killAt
	l.mu.Unlock()
	if kill {
		l.shutdown(ctx)
	}
	select {
	case l.held <- struct{}{}:
		return algorithms.Lease{}, nil
	case <-ctx.Done():
		return algorithms.Lease{}, ctx.Err()
	}
}

func (l *serverKiller) Release(context.Context, algorithms.Lease) error {
	select {
	case <-l.held:
	default: // not held: a release after the run ended
	}
	return nil
}

var (
	registerServerKiller sync.Once
	serverKillerLock     *serverKiller
)

// registerKiller registers test-server-killer once, and sets it to shut the server down at its
// killAt-th Acquire of the next run.
func registerKiller(killAt int) *serverKiller {
	registerServerKiller.Do(func() {
		serverKillerLock = &serverKiller{}
		algorithms.Register(algorithms.Info{Name: "test-server-killer", Topologies: []string{cluster.RedisSingle},
			New: func(cfg algorithms.Config) (algorithms.Locker, error) {
				serverKillerLock.mu.Lock()
				defer serverKillerLock.mu.Unlock()
				serverKillerLock.addr = cfg.Addrs[0]
				return serverKillerLock, nil
			}})
	})
	l := serverKillerLock
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held, l.calls, l.killAt = make(chan struct{}, 1), 0, killAt
	return l
}

// TestServerDeathEndsRun: a server that exits by itself (here a SHUTDOWN no fault sent) ends the
// run with an abort line naming it, and the run is unknown, not judged on what a dead server
// left (before, a lock that needs no server ran on and was "safe", and a session lock whose
// MariaDB crashed was "stuck").
func TestServerDeathEndsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	registerKiller(5)
	dir := t.TempDir()
	const duration = 5 * time.Second
	res, err := harness.Run(context.Background(), harness.Config{Algorithm: "test-server-killer", Scenario: "server-death",
		Dir: dir, Duration: duration, Workload: harness.Workload{Clients: 2}})
	if errors.Is(err, cluster.ErrMissingBinary) {
		testenv.MissingServer(t, err)
	}
	if err == nil || !strings.Contains(err.Error(), "redis-1") || !strings.Contains(err.Error(), "exited by itself") {
		t.Fatalf("err = %v, want the server's death as the run's error", err)
	}
	if res == nil || res.Elapsed > duration-time.Second {
		t.Errorf("the run went on after the server died (result %+v)", res)
	}
	h, rerr := history.ReadFile(filepath.Join(dir, harness.HistoryFile))
	if rerr != nil {
		t.Fatal(rerr)
	}
	abort := ""
	for _, e := range h.Events {
		if e.Type == history.TypeAbort {
			abort = e.Error
		}
	}
	if !strings.Contains(abort, "redis-1") || !strings.Contains(abort, "servers/redis-1.log") {
		t.Errorf("abort line %q, want redis-1's death and where its log is", abort)
	}
	out := checker.CheckHistory(h, checker.Options{})
	if out.Result.Verdict != checker.Unknown {
		t.Errorf("verdict %s, want unknown (warnings %v)", out.Result.Verdict, out.Result.Warnings)
	}
}

// TestServerDeathAfterTheStop: a server that dies once the run stopped decided changes nothing:
// the verdict was in before it, and what follows is the report's tail.
func TestServerDeathAfterTheStop(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	lock := registerKiller(-1)
	dir := t.TempDir()
	var once sync.Once
	decide := func(h *history.History) (string, string) {
		// The stop line is written as this returns; the shutdown comes 50 ms later, in the tail.
		once.Do(func() { time.AfterFunc(50*time.Millisecond, func() { lock.shutdown(context.Background()) }) })
		return "safe", "decided by the test"
	}
	res, err := harness.Run(context.Background(), harness.Config{Algorithm: "test-server-killer", Scenario: "server-death",
		Dir: dir, Duration: 5 * time.Second, Workload: harness.Workload{Clients: 2}, Decide: decide})
	if errors.Is(err, cluster.ErrMissingBinary) {
		testenv.MissingServer(t, err)
	}
	if err != nil {
		t.Fatalf("err = %v, want none: the server died after the run stopped decided", err)
	}
	h, rerr := history.ReadFile(res.HistoryPath)
	if rerr != nil {
		t.Fatal(rerr)
	}
	stopped, aborted := false, false
	for _, e := range h.Events {
		stopped = stopped || e.Type == history.TypeStop
		aborted = aborted || e.Type == history.TypeAbort
	}
	log, _ := os.ReadFile(filepath.Join(dir, harness.ServersDir, "redis-1.log"))
	killed := strings.Contains(string(log), "User requested shutdown")
	if !stopped || aborted || !killed {
		t.Errorf("stop line %v, abort line %v, server shut down in the run %v; want a stop, no abort, and the shutdown after the stop", stopped, aborted, killed)
	}
}

// TestTwoRunsAtOnce: two runs on the same machine at the same time share no port or directory,
// and both stay correct.
func TestTwoRunsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	var wg sync.WaitGroup
	results := make([]*checker.Result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = run(t, harness.Config{Algorithm: "token", Scenario: "baseline", Seed: int64(i),
				Duration: time.Second, Proxies: harness.ProxyAlways})
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r == nil || r.Verdict != checker.Safe || r.AcquiresOk < 20 {
			t.Errorf("run %d: %+v", i, r)
		}
	}
}

// TestZeroHoldThinkNoTail: NoHold and NoThink make the hold and the think time zero (a scenario
// file's "hold: 0s"), and a run without faults ends with its fault phase: no liveness tail.
func TestZeroHoldThinkNoTail(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	dir := t.TempDir()
	r := run(t, harness.Config{Algorithm: "token", Scenario: "throughput", Seed: 1, Dir: dir, Duration: time.Second,
		Workload: harness.Workload{Clients: 2, TTL: 10 * time.Second, NoHold: true, NoThink: true}})
	h, err := history.ReadFile(filepath.Join(dir, harness.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if h.Meta.HoldNs != 0 {
		t.Errorf("hold_ns %d, want 0", h.Meta.HoldNs)
	}
	if r.Verdict != checker.Safe {
		t.Errorf("verdict %s (%s), want safe", r.Verdict, r.DecidedBy)
	}
	// With a 10 s TTL the old default tail (StuckAfter + TTL) alone was 30 s of operations.
	last := h.Events[len(h.Events)-1].AtNs
	if last > int64(5*time.Second) {
		t.Errorf("a 1 s run without faults recorded operations until %v: it ran a liveness tail it does not need", time.Duration(last))
	}
}
