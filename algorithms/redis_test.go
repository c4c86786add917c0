package algorithms_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
	"github.com/redis/go-redis/v9"
)

var singleRedis = []string{"setnx", "setnx-expire", "setnx-px", "getset", "token"}

// serverLease checks what the server holds for each single-node algorithm after an acquire.
func serverLease(alg string, r *redis.Client, key string, ttl time.Duration) func(*testing.T, algorithms.Lease) {
	return func(t *testing.T, l algorithms.Lease) {
		t.Helper()
		d := pttl(t, r, key)
		switch alg {
		case "setnx":
			if d >= 0 || l.TTL != 0 || l.Validity != 0 {
				t.Errorf("setnx: PTTL %v, lease %+v; want no expiry anywhere", d, l)
			}
		case "getset":
			if d >= 0 {
				t.Errorf("getset: PTTL %v, want no server expiry", d)
			}
			v, err := r.Get(context.Background(), key).Int64()
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			if at := time.UnixMilli(v); at.Before(time.Now().Add(ttl-time.Second)) || at.After(time.Now().Add(ttl+time.Second)) {
				t.Errorf("getset: value %v, want about now+%v", at, ttl)
			}
			if l.TTL != ttl || l.Validity != ttl {
				t.Errorf("getset lease %+v, want TTL and Validity %v", l, ttl)
			}
		default:
			if d <= 0 || d > ttl {
				t.Errorf("%s: PTTL %v, want in (0, %v]", alg, d, ttl)
			}
			if l.TTL != ttl || l.Validity != ttl {
				t.Errorf("%s lease %+v, want TTL and Validity %v", alg, l, ttl)
			}
		}
	}
}

func TestRedisSingle(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 8, Proxies: true})
	r := direct(t, c, 0)
	ctx := context.Background()
	const ttl = 5 * time.Second

	for _, alg := range singleRedis {
		t.Run("handover/"+alg, func(t *testing.T) {
			key := "handover-" + alg
			a := newLocker(t, c, alg, 1, key, opts{ttl: ttl})
			b := newLocker(t, c, alg, 2, key, opts{ttl: ttl})
			checkHandOver(t, a, b, serverLease(alg, r, key, ttl))
			if n := r.Exists(ctx, key).Val(); n != 0 {
				t.Errorf("key still there after the last release")
			}
		})
	}

	t.Run("token/stale-release", func(t *testing.T) {
		const key, short = "token-stale", 300 * time.Millisecond
		a := newLocker(t, c, "token", 1, key, opts{ttl: short})
		b := newLocker(t, c, "token", 2, key, opts{ttl: ttl})
		la := acquire(t, a, time.Second)
		lb := acquire(t, b, 3*time.Second) // gets it once A's key expired
		if err := a.Release(ctx, la); !errors.Is(err, algorithms.ErrNotHeld) {
			t.Fatalf("stale Release: %v, want ErrNotHeld", err)
		}
		if v := r.Get(ctx, key).Val(); v != lb.Data {
			t.Fatalf("after A's stale release the key is %q, want B's token %q", v, lb.Data)
		}
		if err := b.Release(ctx, lb); err != nil {
			t.Fatalf("B Release: %v", err)
		}
	})

	t.Run("setnx-px/deletes-other-holder", func(t *testing.T) {
		const key, short = "px-stale", 300 * time.Millisecond
		a := newLocker(t, c, "setnx-px", 1, key, opts{ttl: short})
		b := newLocker(t, c, "setnx-px", 2, key, opts{ttl: ttl})
		la := acquire(t, a, time.Second)
		acquire(t, b, 3*time.Second)
		// The documented bug: the plain DEL removes B's lock.
		if err := a.Release(ctx, la); err != nil {
			t.Fatalf("stale Release: %v, want nil (plain DEL)", err)
		}
		if n := r.Exists(ctx, key).Val(); n != 0 {
			t.Fatalf("B's key survived A's plain DEL; the setnx-px bug is not reproduced")
		}
	})

	t.Run("getset/takeover-race", func(t *testing.T) {
		const key, n = "getset-race", 8
		// A holder that died long ago.
		stale := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
		if err := r.Set(ctx, key, stale, 0).Err(); err != nil {
			t.Fatal(err)
		}
		// Every client stops after its first GET until all have seen the stale value.
		var arrived sync.WaitGroup
		arrived.Add(n)
		all := make(chan struct{})
		go func() { arrived.Wait(); close(all) }()
		lockers := make([]algorithms.Locker, n)
		for i := range lockers {
			var once sync.Once
			barrier := func(ctx context.Context, name string) error {
				if name == "acquire:after-get" {
					once.Do(func() {
						arrived.Done()
						select {
						case <-all:
						case <-time.After(3 * time.Second):
						}
					})
				}
				return nil
			}
			lockers[i] = newLocker(t, c, "getset", i+1, key, opts{ttl: ttl, point: barrier})
		}
		var mu sync.Mutex
		var winners []int
		leases := map[int]algorithms.Lease{}
		var wg sync.WaitGroup
		for i, l := range lockers {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
				defer cancel()
				lease, err := l.Acquire(ctx)
				switch {
				case err == nil:
					mu.Lock()
					winners = append(winners, i+1)
					leases[i] = lease
					mu.Unlock()
				case !errors.Is(err, context.DeadlineExceeded) || algorithms.IsUnknown(err):
					t.Errorf("client %d: %v", i+1, err)
				}
			})
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("winners of the GETSET race: %v, want exactly one", winners)
		}
		// The losers' GETSETs overwrote the winner's expiry (the seed accepts that), so the
		// winner's own release cannot recognise its value any more.
		for i, lease := range leases {
			t.Logf("client %d won; its release: %v", i+1, lockers[i].Release(ctx, lease))
		}
	})

	for _, alg := range singleRedis {
		t.Run("points/"+alg, func(t *testing.T) {
			testPoints(t, c, r, alg)
		})
	}
}

// testPoints checks that the points are called in Info.Points order, and that an error from each
// point aborts at once with that error.
func testPoints(t *testing.T, c cluster.Cluster, r *redis.Client, alg string) {
	ctx := context.Background()
	info, _ := algorithms.Lookup(alg)
	prepare := func(key string) {
		if alg == "getset" { // an expired holder, so acquire goes through SETNX fail, GET, GETSET
			stale := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
			if err := r.Set(ctx, key, stale, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	key := "points-" + alg
	prepare(key)
	rec := &recorder{}
	l := newLocker(t, c, alg, 3, key, opts{ttl: 5 * time.Second, point: rec.point})
	lease := acquire(t, l, 2*time.Second)
	if err := l.Release(ctx, lease); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := rec.names(); !slices.Equal(got, info.Points) {
		t.Fatalf("points called %q, Info.Points %q", got, info.Points)
	}

	for i, p := range info.Points {
		t.Run(p, func(t *testing.T) {
			key := fmt.Sprintf("abort-%s-%d", alg, i)
			prepare(key)
			rec := &recorder{failAt: p}
			l := newLocker(t, c, alg, 4, key, opts{ttl: 5 * time.Second, point: rec.point})
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			lease, err := l.Acquire(actx)
			if strings.HasPrefix(p, "acquire:") {
				if !errors.Is(err, errBoom) {
					t.Fatalf("Acquire: %v, want the error of point %s", err, p)
				}
				return
			}
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			before, _ := r.Get(ctx, key).Result()
			err = l.Release(ctx, lease)
			if !errors.Is(err, errBoom) {
				t.Fatalf("Release: %v, want the point's error", err)
			}
			if after, _ := r.Get(ctx, key).Result(); after != before || after == "" {
				t.Fatalf("release aborted at %s but the key changed: %q -> %q", p, before, after)
			}
		})
	}
}

func TestRedisSentinel(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSentinel, Clients: 2, Proxies: true})
	r := master(t, c)
	const ttl = 5 * time.Second
	for _, alg := range singleRedis {
		t.Run(alg, func(t *testing.T) {
			key := "sentinel-" + alg
			a := newLocker(t, c, alg, 1, key, opts{ttl: ttl})
			b := newLocker(t, c, alg, 2, key, opts{ttl: ttl})
			checkHandOver(t, a, b, serverLease(alg, r, key, ttl))
		})
	}
}

func TestRedlock(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisMulti, Nodes: 5, Clients: 4, Proxies: true})
	ctx := context.Background()
	nodes := make([]*redis.Client, 5)
	for i := range nodes {
		nodes[i] = direct(t, c, i)
	}
	const ttl = 5 * time.Second

	t.Run("handover", func(t *testing.T) {
		a := newLocker(t, c, "redlock", 1, "handover", opts{ttl: ttl})
		b := newLocker(t, c, "redlock", 2, "handover", opts{ttl: ttl})
		checkHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
			if l.Validity <= 0 || l.Validity >= ttl || l.TTL != ttl {
				t.Errorf("lease %+v, want 0 < Validity < TTL = %v", l, ttl)
			}
			for i, r := range nodes {
				if d := pttl(t, r, "handover"); d <= 0 || d > ttl {
					t.Errorf("node %d: PTTL %v, want in (0, %v]", i+1, d, ttl)
				}
			}
		})
	})

	t.Run("points", func(t *testing.T) {
		info, _ := algorithms.Lookup("redlock")
		rec := &recorder{}
		l := newLocker(t, c, "redlock", 3, "points", opts{ttl: ttl, point: rec.point})
		if err := l.Release(ctx, acquire(t, l, 2*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := rec.names(); !slices.Equal(got, info.Points) {
			t.Fatalf("points called %q, Info.Points %q", got, info.Points)
		}
		rec = &recorder{failAt: "acquire:after-quorum"}
		l = newLocker(t, c, "redlock", 3, "points-abort", opts{ttl: ttl, point: rec.point})
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := l.Acquire(actx); !errors.Is(err, errBoom) || !algorithms.IsUnknown(err) {
			t.Fatalf("Acquire stopped after the quorum: %v, want the point's error, unknown", err)
		}
	})

	t.Run("quorum", func(t *testing.T) {
		for _, n := range []string{"redis-4", "redis-5"} {
			if err := c.Kill(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		a := newLocker(t, c, "redlock", 1, "quorum", opts{ttl: ttl})
		la := acquire(t, a, 3*time.Second) // 3 of 5
		if la.Validity <= 0 {
			t.Fatalf("validity %v", la.Validity)
		}
		if err := a.Release(ctx, la); err != nil {
			t.Fatalf("Release on 3 of 5: %v", err)
		}
		if err := c.Kill(ctx, "redis-3"); err != nil {
			t.Fatal(err)
		}
		b := newLocker(t, c, "redlock", 2, "quorum", opts{ttl: ttl})
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := b.Acquire(actx)
		if err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, algorithms.ErrGaveUp)) {
			t.Fatalf("Acquire on 2 of 5: %v, want ctx end or ErrGaveUp", err)
		}
		if algorithms.IsUnknown(err) {
			t.Errorf("Acquire on 2 of 5 with dead nodes is unknown: %v", err)
		}
		t.Logf("2 of 5: %v", err)
		for i := range 2 {
			if n := nodes[i].Exists(ctx, "quorum").Val(); n != 0 {
				t.Errorf("node %d keeps the failed attempt's key", i+1)
			}
		}
	})
}
