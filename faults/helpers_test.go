package faults_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/servertest"
	"github.com/redis/go-redis/v9"
)

// redisPair starts a redis-single of two clients, each behind proxies of its own (parsing the
// lock's commands when wire is set), and the nemesis's view of it.
func redisPair(t *testing.T, wire bool) (cluster.Cluster, *testEnv) {
	t.Helper()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 2, Proxies: true, Wire: wire})
	return c, &testEnv{c: c, clients: 2}
}

// clockCall is one SetClock call the nemesis made.
type clockCall struct {
	Client int
	Offset time.Duration
	Rate   float64
}

// testEnv is the nemesis's view of a run: a real cluster, and clients whose clocks are only
// recorded.
type testEnv struct {
	c       cluster.Cluster
	clients int

	mu     sync.Mutex
	clocks []clockCall
	lease  time.Duration
}

func (e *testEnv) Cluster() cluster.Cluster { return e.c }
func (e *testEnv) Clients() int             { return e.clients }
func (e *testEnv) TTL() time.Duration       { return time.Second }

// Lease is the lock's lease as the nemesis sizes faults against it: lease when set, else the TTL.
func (e *testEnv) Lease() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lease > 0 {
		return e.lease
	}
	return e.TTL()
}

func (e *testEnv) Renews() time.Duration { return 0 }

// setLease makes the lock's lease d, as a client reporting Lease.TTL d does.
func (e *testEnv) setLease(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lease = d
}

func (e *testEnv) SetClock(c int, offset time.Duration, rate float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clocks = append(e.clocks, clockCall{c, offset, rate})
}

func (e *testEnv) clockCalls() []clockCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.clocks)
}

// recorder keeps the history lines the nemesis emits, stamped by one monotonic clock.
type recorder struct {
	t0     time.Time
	mu     sync.Mutex
	events []history.Event
}

func (r *recorder) record(e history.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) now() int64 { return int64(time.Since(r.t0)) }

func (r *recorder) all() []history.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) spans() []history.FaultSpan { return history.Faults(r.all()) }

// span returns the first occurrence of fault name, if it started.
func (r *recorder) span(name string) (history.FaultSpan, bool) {
	for _, s := range r.spans() {
		if s.Name == name {
			return s, true
		}
	}
	return history.FaultSpan{}, false
}

// waitStart waits until fault name has a start line and returns its span.
func (r *recorder) waitStart(t *testing.T, name string, within time.Duration) history.FaultSpan {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if s, ok := r.span(name); ok {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("no start line for %s within %v; history: %+v", name, within, r.all())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitEnd waits until fault name has an end line and returns its span.
func (r *recorder) waitEnd(t *testing.T, name string, within time.Duration) history.FaultSpan {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if s, ok := r.span(name); ok && s.End != history.Never {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("no end line for %s within %v; history: %+v", name, within, r.all())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkLines asserts that every fault line is well formed, and that fault name started once on
// target without error and ended.
func checkLines(t *testing.T, r *recorder, name, target string) history.FaultSpan {
	t.Helper()
	for _, e := range r.all() {
		if e.Type != history.TypeFault || e.Fault == 0 || (e.Phase != history.PhaseStart && e.Phase != history.PhaseEnd) {
			t.Errorf("malformed fault line %+v", e)
		}
	}
	s, ok := r.span(name)
	switch {
	case !ok:
		t.Fatalf("no start line for %s; history: %+v", name, r.all())
	case s.Error != "":
		t.Errorf("%s recorded error %q", name, s.Error)
	case s.Target != target:
		t.Errorf("%s target = %q, want %q", name, s.Target, target)
	case s.End == history.Never:
		t.Errorf("%s has no end line; history: %+v", name, r.all())
	case s.End < s.Start:
		t.Errorf("%s ends at %d before it starts at %d", name, s.End, s.Start)
	}
	return s
}

// newNemesis builds a nemesis over env recording into a fresh recorder; HealAll runs at cleanup
// (again: it must be idempotent).
func newNemesis(t *testing.T, env faults.Env, specs []faults.Spec, seed int64) (*faults.Nemesis, *recorder) {
	t.Helper()
	rec := &recorder{t0: time.Now()}
	n, err := faults.New(env, specs, faults.Options{Seed: seed, Record: rec.record, Now: rec.now, Duration: 30 * time.Second})
	if err != nil {
		t.Fatalf("faults.New: %v", err)
	}
	t.Cleanup(n.HealAll)
	return n, rec
}

// startNemesis is newNemesis followed by Start.
func startNemesis(t *testing.T, env faults.Env, specs []faults.Spec, seed int64) (*faults.Nemesis, *recorder) {
	t.Helper()
	n, rec := newNemesis(t, env, specs, seed)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := n.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return n, rec
}

// rclient is a Redis client with one connection and short timeouts, so a black-holed link shows as
// a timeout quickly. It never retries.
func rclient(t *testing.T, addr string, timeout time.Duration) *redis.Client {
	t.Helper()
	rc := redis.NewClient(&redis.Options{
		Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		PoolSize: 1, PoolTimeout: timeout,
	})
	t.Cleanup(func() { rc.Close() })
	return rc
}

// proxied returns client c's proxied address of data node i (0-based).
func proxied(t *testing.T, c cluster.Cluster, client, i int) string {
	t.Helper()
	ep := c.Endpoints(client)
	if len(ep.Addrs) <= i {
		t.Fatalf("client %d has no address for data node %d: %+v", client, i, ep)
	}
	return ep.Addrs[i]
}

// nodeAddr returns the real (unproxied) address of node name.
func nodeAddr(t *testing.T, c cluster.Cluster, name string) string {
	t.Helper()
	for _, n := range c.Nodes() {
		if n.Name == name {
			return n.Addr
		}
	}
	t.Fatalf("no node %s in %+v", name, c.Nodes())
	return ""
}

// isTimeout reports whether err is a network timeout (a black-holed link), not a refusal.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// pingP50 returns the median of k PINGs on rc (after one PING to warm the connection).
func pingP50(t *testing.T, ctx context.Context, rc *redis.Client, k int) time.Duration {
	t.Helper()
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatalf("warm-up PING: %v", err)
	}
	ds := make([]time.Duration, k)
	for i := range ds {
		t0 := time.Now()
		if err := rc.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING %d: %v", i, err)
		}
		ds[i] = time.Since(t0)
	}
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	return ds[k/2]
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func ms(d time.Duration) faults.Duration { return faults.Duration(d) }

// sz is d as a fault's size (absolute).
func sz(d time.Duration) faults.Size { return faults.Fixed(d) }
