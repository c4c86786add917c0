package algorithms_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

// The point-free user locks (user_token.go, user_redlock.go, user_zookeeper.go): each acquires,
// releases and excludes, and each mutant's one mistake shows on the servers — through the proxies
// only, since these locks call no named point.

// newUser builds client's Locker of alg with an explicit request timeout. With keep, the test
// closes it itself (no cleanup Close).
func newUser(t *testing.T, c cluster.Cluster, alg string, client int, name string, ttl, op time.Duration, keep bool) algorithms.Locker {
	t.Helper()
	info, err := algorithms.Lookup(alg)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Points) != 0 {
		t.Fatalf("%s declares points %v: a user lock marks none", alg, info.Points)
	}
	ep := c.Endpoints(client)
	cfg := algorithms.Config{Client: client, Name: name, TTL: ttl, OpTimeout: op, Addrs: ep.Addrs, Dial: ep.Dial,
		Rand: rand.New(rand.NewPCG(uint64(client), 7)),
		Point: func(_ context.Context, p string) error {
			t.Errorf("%s called point %s", alg, p)
			return nil
		}}
	if ep.MasterName != "" {
		cfg.Sentinel = &algorithms.SentinelConfig{MasterName: ep.MasterName, Addrs: ep.SentinelAddrs}
	}
	l, err := info.New(cfg)
	if err != nil {
		t.Fatalf("%s.New: %v", alg, err)
	}
	if !keep {
		t.Cleanup(func() {
			if cl, ok := l.(algorithms.Closer); ok {
				if err := cl.Close(); err != nil {
					t.Errorf("%s client %d Close: %v", alg, client, err)
				}
			}
		})
	}
	return l
}

// toxic adds a toxic (JSON attributes) on client cl's links to nodes (all when nil) until the
// returned func removes it.
func toxic(t *testing.T, c cluster.Cluster, cl int, nodes []string, typ, stream, attrs string) func() {
	t.Helper()
	if nodes == nil {
		for _, n := range c.Nodes() {
			nodes = append(nodes, n.Name)
		}
	}
	var heal []func()
	for _, n := range nodes {
		link, err := c.Link(cl, n)
		if err != nil {
			t.Fatal(err)
		}
		name := "user-" + typ + "-" + stream
		body := `{"name":"` + name + `","type":"` + typ + `","stream":"` + stream + `","attributes":` + attrs + `}`
		if _, err := link.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		heal = append(heal, func() { _ = link.Toxics.RemoveToxic(context.Background(), name) })
	}
	done := false
	h := func() {
		if !done {
			done = true
			for _, f := range heal {
				f()
			}
		}
	}
	t.Cleanup(h)
	return h
}

// acquireAsync starts an Acquire with deadline d and returns its result channel.
func acquireAsync(l algorithms.Locker, d time.Duration) <-chan leaseErr {
	ch := make(chan leaseErr, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		lease, err := l.Acquire(ctx)
		ch <- leaseErr{lease, err}
	}()
	return ch
}

type leaseErr struct {
	lease algorithms.Lease
	err   error
}

func userDrift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

func TestUserToken(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 4, Proxies: true})
	r := direct(t, c, 0)
	ctx := context.Background()

	t.Run("handover", func(t *testing.T) {
		const ttl = 5 * time.Second
		for _, alg := range []string{"user-token", "user-token-get-del", "user-token-no-validity",
			"user-token-validity-from-reply", "user-token-renew", "user-token-blind-renew"} {
			t.Run(alg, func(t *testing.T) {
				key := "handover-" + alg
				a := newUser(t, c, alg, 1, key, ttl, 0, false)
				b := newUser(t, c, alg, 2, key, ttl, 0, false)
				checkHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
					if d := pttl(t, r, key); d <= 0 || d > ttl {
						t.Errorf("PTTL %v, want in (0, %v]", d, ttl)
					}
					var want time.Duration
					switch alg {
					case "user-token", "user-token-get-del":
						want = ttl - userDrift(ttl)
					case "user-token-validity-from-reply":
						if l.Validity <= ttl {
							t.Errorf("Validity %v, want TTL + the acquire's time (> %v)", l.Validity, ttl)
						}
						want = l.Validity
					}
					if l.Validity != want || l.TTL != ttl || l.Fence != 0 {
						t.Errorf("lease %+v, want Validity %v and TTL %v", l, want, ttl)
					}
				})
			})
		}
	})

	// The acquire's replies come 150 ms late: the correct lock counts its validity from the call,
	// the mutant from the reply.
	t.Run("validity", func(t *testing.T) {
		const ttl, lag = time.Second, 150 * time.Millisecond
		for i, alg := range []string{"user-token", "user-token-validity-from-reply", "user-token-no-validity"} {
			l := newUser(t, c, alg, 3, fmt.Sprintf("validity-%d", i), ttl, 2*time.Second, false)
			heal := toxic(t, c, 3, nil, "latency", "downstream", fmt.Sprintf(`{"latency":%d}`, lag.Milliseconds()))
			lease := acquire(t, l, 5*time.Second)
			heal()
			switch alg {
			case "user-token":
				if lease.Validity != ttl-userDrift(ttl) {
					t.Errorf("%s: Validity %v, want TTL − drift %v from the call", alg, lease.Validity, ttl-userDrift(ttl))
				}
			case "user-token-validity-from-reply":
				if lease.Validity < ttl+lag {
					t.Errorf("%s: Validity %v, want ≥ TTL + the reply's lag %v", alg, lease.Validity, ttl+lag)
				}
			case "user-token-no-validity":
				if lease.Validity != 0 || lease.TTL != ttl {
					t.Errorf("%s: lease %+v, want Validity 0 and TTL %v", alg, lease, ttl)
				}
			}
			if err := l.Release(ctx, lease); err != nil {
				t.Errorf("%s Release: %v", alg, err)
			}
		}
	})

	// A's release reaches the server at once but its replies come 600 ms late, past A's TTL; B is
	// granted the key meanwhile. The compare-and-delete ran before the expiry (deleting A's own
	// key); get-del's DEL, sent on its late GET reply, deletes B's key.
	t.Run("stale-release", func(t *testing.T) {
		const ttl = 400 * time.Millisecond
		for _, alg := range []string{"user-token", "user-token-get-del"} {
			t.Run(alg, func(t *testing.T) {
				key := "stale-" + alg
				a := newUser(t, c, alg, 1, key, ttl, 3*time.Second, false)
				// B's lease outlives the test: its key can only go by A's hand.
				b := newUser(t, c, alg, 2, key, 10*time.Second, 3*time.Second, false)
				la := acquire(t, a, 5*time.Second)
				heal := toxic(t, c, 1, nil, "latency", "downstream", `{"latency":600}`)
				got := acquireAsync(b, 5*time.Second)
				errA := a.Release(ctx, la)
				heal()
				rb := <-got
				if rb.err != nil {
					t.Fatalf("B Acquire: %v", rb.err)
				}
				v, err := r.Get(ctx, key).Result()
				switch alg {
				case "user-token":
					if errA != nil || err != nil || v != rb.lease.Data.(string) {
						t.Errorf("after A's late-answered release (%v): key = %q, %v; want B's token %q", errA, v, err, rb.lease.Data)
					}
					if err := b.Release(ctx, rb.lease); err != nil {
						t.Errorf("B Release: %v", err)
					}
				case "user-token-get-del":
					if err == nil {
						t.Errorf("after A's GET-then-DEL (%v): key = %q (B's %q); want it deleted by A's DEL", errA, v, rb.lease.Data)
					}
					if err := b.Release(ctx, rb.lease); !errors.Is(err, algorithms.ErrNotHeld) {
						t.Errorf("B Release after A deleted its key: %v, want ErrNotHeld", err)
					}
				}
			})
		}
	})

	t.Run("renew", func(t *testing.T) {
		const ttl, op = 300 * time.Millisecond, 150 * time.Millisecond
		for _, alg := range []string{"user-token-renew", "user-token-blind-renew"} {
			t.Run(alg, func(t *testing.T) {
				blind := alg == "user-token-blind-renew"
				key := "renew-" + alg
				a := newUser(t, c, alg, 1, key, ttl, op, false)
				b := newUser(t, c, alg, 2, key, ttl, op, false)
				va := validator(t, a)
				la := acquire(t, a, 5*time.Second)
				if la.Validity != 0 || la.TTL != ttl {
					t.Errorf("lease %+v: want Validity 0 (renewed until released) and TTL %v", la, ttl)
				}
				time.Sleep(4 * ttl)
				if !va.Valid(la) {
					t.Fatal("Valid false after 4×TTL though every renewal could succeed")
				}
				if v, _ := r.Get(ctx, key).Result(); v != la.Data.(string) && !blind {
					t.Fatalf("key after 4×TTL = %q: the watchdog did not renew", v)
				}
				mustWait(t, b, 200*time.Millisecond)
				// Another client's key takes the place of ours (as after an expiry and a new grant).
				if err := r.Set(ctx, key, "intruder", 5*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(ttl)
				v, _ := r.Get(ctx, key).Result()
				switch {
				case !blind && (v != "intruder" || va.Valid(la)):
					t.Errorf("after another client's key replaced ours: key %q, Valid %v; want it kept and Valid false", v, va.Valid(la))
				case blind && (v == "intruder" || !va.Valid(la)):
					t.Errorf("blind renewal: key %q, Valid %v; want the intruder's key overwritten and Valid true", v, va.Valid(la))
				}
				err := a.Release(ctx, la)
				switch {
				case !blind && !errors.Is(err, algorithms.ErrNotHeld):
					t.Errorf("Release after the refused renewal: %v, want ErrNotHeld", err)
				case blind && err != nil:
					t.Errorf("Release: %v", err)
				}
				r.Del(ctx, key)
				time.Sleep(ttl)
				if n := r.Exists(ctx, key).Val(); n != 0 {
					t.Errorf("the key is back after Release: the watchdog was not stopped")
				}

				// Cut off: the correct watchdog gives the lease up for good, the blind one never.
				la = acquire(t, a, 5*time.Second)
				heal := cut(t, c, 1)
				time.Sleep(ttl)
				if va.Valid(la) == !blind {
					t.Errorf("Valid %v TTL after the holder was cut off", va.Valid(la))
				}
				heal()
				time.Sleep(2 * ttl)
				if va.Valid(la) == !blind {
					t.Errorf("Valid %v after the heal: the correct lock must not take a lost lease back", va.Valid(la))
				}
				_ = a.Release(ctx, la)
			})
		}
	})

	t.Run("close-stops-renewal", func(t *testing.T) {
		const ttl = 300 * time.Millisecond
		l := newUser(t, c, "user-token-blind-renew", 4, "close", ttl, 150*time.Millisecond, true)
		acquire(t, l, 5*time.Second)
		if err := l.(algorithms.Closer).Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * ttl)
		if n := r.Exists(ctx, "close").Val(); n != 0 {
			t.Error("the key outlived its TTL after Close: the watchdog was not stopped")
		}
	})
}

func TestUserTokenSentinel(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSentinel, Clients: 2, Proxies: true})
	for _, alg := range []string{"user-token", "user-token-renew"} {
		t.Run(alg, func(t *testing.T) {
			a := newUser(t, c, alg, 1, "sentinel-"+alg, 5*time.Second, 0, false)
			b := newUser(t, c, alg, 2, "sentinel-"+alg, 5*time.Second, 0, false)
			checkHandOver(t, a, b, nil)
		})
	}
}

func TestUserRedlock(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisMulti, Nodes: 5, Clients: 4, Proxies: true})
	ctx := context.Background()

	t.Run("handover", func(t *testing.T) {
		const ttl = 5 * time.Second
		for _, alg := range []string{"user-redlock", "user-redlock-no-validity", "user-redlock-error-vote"} {
			t.Run(alg, func(t *testing.T) {
				key := "handover-" + alg
				a := newUser(t, c, alg, 1, key, ttl, 0, false)
				b := newUser(t, c, alg, 2, key, ttl, 0, false)
				checkHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
					if l.Validity <= 0 || l.Validity > ttl || l.TTL != ttl {
						t.Errorf("lease %+v, want 0 < Validity ≤ TTL = %v", l, ttl)
					}
					for i := range 5 {
						if d := pttl(t, direct(t, c, i), key); d <= 0 || d > ttl {
							t.Errorf("node %d: PTTL %v, want in (0, %v]", i+1, d, ttl)
						}
					}
				})
			})
		}
	})

	// Every reply to A comes 400 ms late, past the 300 ms TTL: the correct lock never takes such a
	// quorum, the mutant takes it and trusts TTL − drift from then.
	t.Run("slow-quorum", func(t *testing.T) {
		const ttl = 300 * time.Millisecond
		for _, alg := range []string{"user-redlock", "user-redlock-no-validity"} {
			l := newUser(t, c, alg, 3, "slow-"+alg, ttl, 2*time.Second, false)
			heal := toxic(t, c, 3, nil, "latency", "downstream", `{"latency":400}`)
			actx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
			lease, err := l.Acquire(actx)
			cancel()
			heal()
			switch {
			case alg == "user-redlock" && err == nil:
				t.Errorf("%s took a quorum answered after its TTL: %+v", alg, lease)
			case alg == "user-redlock-no-validity" && (err != nil || lease.Validity <= ttl):
				t.Errorf("%s: %+v, %v; want a lease whose Validity (%v) exceeds the TTL", alg, lease, err, lease.Validity)
			}
			if err == nil {
				_ = l.Release(ctx, lease)
			}
		}
	})

	// A is cut off from three of five nodes: the correct lock has no majority; the error-vote
	// mutant counts the three timeouts as votes, and B takes a real majority at the same time.
	t.Run("error-votes", func(t *testing.T) {
		const ttl = 3 * time.Second
		for _, alg := range []string{"user-redlock", "user-redlock-error-vote"} {
			key := "votes-" + alg
			a := newUser(t, c, alg, 3, key, ttl, 200*time.Millisecond, false)
			heal := toxic(t, c, 3, []string{"redis-1", "redis-2", "redis-3"}, "timeout", "upstream", `{"timeout":0}`)
			actx, cancel := context.WithTimeout(ctx, time.Second)
			start := time.Now()
			la, err := a.Acquire(actx)
			cancel()
			heal()
			if alg == "user-redlock" {
				if err == nil {
					t.Errorf("%s holds with two of five nodes: %+v", alg, la)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v, want a lease from two real votes and three errors", alg, err)
			}
			b := newUser(t, c, "user-redlock", 4, key, ttl, 200*time.Millisecond, false)
			lb := acquire(t, b, 2*time.Second) // redis-1..3 are free: a real majority
			if held := time.Since(start); held >= la.Validity {
				t.Errorf("B was granted %v after A's call, past A's validity %v: no overlap shown", held, la.Validity)
			}
			_ = b.Release(ctx, lb)
			_ = a.Release(ctx, la)
		}
	})
}

func TestUserZooKeeper(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.ZooKeeper, Nodes: 1, Clients: 4, Proxies: true})
	ctx := context.Background()
	const session = time.Second

	t.Run("handover", func(t *testing.T) {
		for _, alg := range []string{"user-zookeeper", "user-zookeeper-persistent"} {
			t.Run(alg, func(t *testing.T) {
				a := newUser(t, c, alg, 1, "handover-"+alg, session, 0, false)
				b := newUser(t, c, alg, 2, "handover-"+alg, session, 0, false)
				checkHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
					if l.Validity != 0 || l.TTL != session {
						t.Errorf("lease %+v, want Validity 0 and TTL the session timeout %v", l, session)
					}
					if !validator(t, a).Valid(l) {
						t.Error("Valid false right after Acquire")
					}
				})
			})
		}
	})

	// The holder goes silent (a crash): its session expires. The correct lock's ephemeral node goes
	// with it and the next client is granted; the persistent node stays and nobody ever is.
	t.Run("crash", func(t *testing.T) {
		for i, alg := range []string{"user-zookeeper", "user-zookeeper-persistent"} {
			t.Run(alg, func(t *testing.T) {
				name := "crash-" + alg
				a := newUser(t, c, alg, 1+2*i, name, session, 0, false)
				b := newUser(t, c, alg, 2+2*i, name, session, 0, false)
				la := acquire(t, a, 10*time.Second)
				va := validator(t, a)
				heal := cut(t, c, 1+2*i)
				got := acquireAsync(b, 4*time.Second)
				rb := <-got
				if va.Valid(la) {
					t.Error("Valid true while cut off past the session timeout")
				}
				switch alg {
				case "user-zookeeper":
					if rb.err != nil {
						t.Fatalf("B Acquire after A's session expired: %v", rb.err)
					}
				case "user-zookeeper-persistent":
					if rb.err == nil {
						t.Fatalf("B was granted though A's persistent node is still there: %+v", rb.lease)
					}
				}
				heal()
				for range 40 { // 2 s: reconnected, the client is told its session expired
					if va.Valid(la) {
						t.Fatal("Valid true again after the heal: the session expired, the lock is lost for good")
					}
					time.Sleep(50 * time.Millisecond)
				}
				err := a.Release(ctx, la)
				switch alg {
				case "user-zookeeper":
					if !errors.Is(err, algorithms.ErrNotHeld) {
						t.Errorf("Release after the session expired: %v, want ErrNotHeld", err)
					}
					if err := b.Release(ctx, rb.lease); err != nil {
						t.Errorf("B Release: %v", err)
					}
				case "user-zookeeper-persistent":
					if err != nil {
						t.Errorf("Release of the persistent node: %v", err)
					}
				}
			})
		}
	})
}
