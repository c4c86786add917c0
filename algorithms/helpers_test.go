package algorithms_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/redis/go-redis/v9"
)

// opts tunes one test client.
type opts struct {
	ttl   time.Duration
	point algorithms.PointFunc
	// opTimeout bounds each request (Config.OpTimeout; 0: the algorithm's default).
	opTimeout time.Duration
	// retryDelay is the pause between acquire attempts (Config.RetryDelay; 0: the default).
	retryDelay time.Duration
}

// newLocker builds client's Locker of algorithm alg for lock name, closed at the end of the test.
func newLocker(t *testing.T, c cluster.Cluster, alg string, client int, name string, o opts) algorithms.Locker {
	t.Helper()
	info, err := algorithms.Lookup(alg)
	if err != nil {
		t.Fatal(err)
	}
	ep := c.Endpoints(client)
	cfg := algorithms.Config{
		Client: client,
		Name:   name,
		TTL:    o.ttl,
		Addrs:  ep.Addrs,
		Dial:   ep.Dial,
		Point:  o.point,
		Rand:   rand.New(rand.NewPCG(uint64(client), 42)),

		OpTimeout:  o.opTimeout,
		RetryDelay: o.retryDelay,
	}
	if ep.MasterName != "" {
		cfg.Sentinel = &algorithms.SentinelConfig{MasterName: ep.MasterName, Addrs: ep.SentinelAddrs}
	}
	if ep.SQL != nil {
		l := algorithms.SQLLogin(*ep.SQL)
		cfg.SQL = &l
	}
	if ep.Kube != nil {
		k := algorithms.KubeAccess(*ep.Kube)
		cfg.Kube = &k
	}
	l, err := info.New(cfg)
	if err != nil {
		t.Fatalf("%s.New: %v", alg, err)
	}
	t.Cleanup(func() {
		if cl, ok := l.(algorithms.Closer); ok {
			if err := cl.Close(); err != nil {
				t.Errorf("%s client %d Close: %v", alg, client, err)
			}
		}
	})
	return l
}

// direct returns a plain client to data node i (real address, no proxy) to inspect the server.
func direct(t *testing.T, c cluster.Cluster, i int) *redis.Client {
	t.Helper()
	r := redis.NewClient(&redis.Options{Addr: c.Nodes()[i].Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// master returns a plain client to the node that is master now.
func master(t *testing.T, c cluster.Cluster) *redis.Client {
	t.Helper()
	name, err := c.Master(context.Background())
	if err != nil {
		t.Fatalf("Master: %v", err)
	}
	for i, n := range c.Nodes() {
		if n.Name == name {
			return direct(t, c, i)
		}
	}
	t.Fatalf("master %s not among %v", name, c.Nodes())
	return nil
}

func acquire(t *testing.T, l algorithms.Locker, d time.Duration) algorithms.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	lease, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return lease
}

// mustWait checks that an Acquire with a short deadline fails definitely because ctx ended.
func mustWait(t *testing.T, l algorithms.Locker, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	lease, err := l.Acquire(ctx)
	if err == nil {
		t.Fatalf("second client acquired a held lock: %+v", lease)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire under a held lock: %v, want a context.DeadlineExceeded", err)
	}
	if algorithms.IsUnknown(err) {
		t.Fatalf("Acquire that only waited is unknown: %v", err)
	}
}

// checkHandOver is the basic contract: A holds, B waits, A releases, B (blocked) gets it.
func checkHandOver(t *testing.T, a, b algorithms.Locker, check func(*testing.T, algorithms.Lease)) {
	t.Helper()
	la := acquire(t, a, 5*time.Second)
	if check != nil {
		check(t, la)
	}
	mustWait(t, b, 300*time.Millisecond)

	type result struct {
		lease algorithms.Lease
		err   error
	}
	got := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l, err := b.Acquire(ctx)
		got <- result{l, err}
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case r := <-got:
		t.Fatalf("B acquired while A holds: %+v %v", r.lease, r.err)
	default:
	}
	if err := a.Release(context.Background(), la); err != nil {
		t.Fatalf("A Release: %v", err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("B Acquire after A released: %v", r.err)
	}
	if err := b.Release(context.Background(), r.lease); err != nil {
		t.Fatalf("B Release: %v", err)
	}
}

// recorder is a PointFunc that records the points called and fails at one of them.
type recorder struct {
	mu     sync.Mutex
	seen   []string
	failAt string
}

var errBoom = errors.New("test: stopped at point")

func (r *recorder) point(_ context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, name)
	if name == r.failAt {
		return errBoom
	}
	return nil
}

func (r *recorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

func pttl(t *testing.T, r *redis.Client, key string) time.Duration {
	t.Helper()
	d, err := r.PTTL(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return d
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietRedis{}) // go-redis logs every Sentinel discovery
	os.Exit(m.Run())
}

// checkSessionKill: A (alg) holds, B (waiter, the careful lock) waits; the server ends A's
// session. B is granted at once, A learns it only by asking (Valid; wantValid for a mutant that
// does not ask), A's release is harmless, and A's next acquire starts a new session.
func checkSessionKill(t *testing.T, c cluster.Cluster, alg, waiter string, wantValid bool) {
	t.Helper()
	ctx := context.Background()
	killer, ok := c.(cluster.SessionKiller)
	if !ok {
		t.Fatal("the cluster is no SessionKiller")
	}
	name := "kill-" + alg
	a := newLocker(t, c, alg, 1, name, opts{ttl: time.Second})
	b := newLocker(t, c, waiter, 2, name, opts{ttl: time.Second})
	la := acquire(t, a, 5*time.Second)
	got := make(chan error, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		lb, err := b.Acquire(actx)
		if err == nil {
			err = b.Release(ctx, lb)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	n, err := killer.KillSessions(ctx, 1)
	if err != nil || n != 1 {
		t.Fatalf("KillSessions(1) = %d, %v; want 1", n, err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("B after A's session was killed: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("B not granted 5 s after A's session was killed")
	}
	if v := a.(algorithms.Validator).Valid(la); v != wantValid {
		t.Errorf("%s: Valid after its session was killed = %v, want %v", alg, v, wantValid)
	}
	if err := a.Release(ctx, la); err != nil && !errors.Is(err, algorithms.ErrNotHeld) && !algorithms.IsUnknown(err) {
		t.Errorf("Release after the kill = %v, want nil (the session is closed), ErrNotHeld or unknown", err)
	}
	// A's next acquire starts a new session.
	la = acquire(t, a, 5*time.Second)
	if err := a.Release(ctx, la); err != nil {
		t.Errorf("Release on the new session: %v", err)
	}
}
