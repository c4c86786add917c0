package faults_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/servertest"
	"github.com/redis/go-redis/v9"
)

type pointResult struct {
	took time.Duration
	err  error
}

// pointAsync calls n.Point for client c in its own goroutine, as a client would.
func pointAsync(ctx context.Context, n *faults.Nemesis, c int, name string) <-chan pointResult {
	done := make(chan pointResult, 1)
	go func() {
		t0 := time.Now()
		err := n.Point(ctx, c, name)
		done <- pointResult{time.Since(t0), err}
	}()
	return done
}

// TestClientPause shows that client-pause holds the calling client at its point for about For,
// black-holes that client's links meanwhile (not the other client's), and restores them.
func TestClientPause(t *testing.T) {
	t.Parallel()
	c, env := redisPair(t, false)
	ctx := ctxT(t, 30*time.Second)
	const pause = 1500 * time.Millisecond
	rc1 := rclient(t, proxied(t, c, 1, 0), 300*time.Millisecond)
	rc2 := rclient(t, proxied(t, c, 2, 0), 300*time.Millisecond)

	n, rec := newNemesis(t, env, []faults.Spec{{Kind: "client-pause", Point: "cs:before-write", For: sz(pause)}}, 1)
	done := pointAsync(ctx, n, 1, "cs:before-write")
	rec.waitStart(t, "client-pause", 5*time.Second)
	if err := rc1.Ping(ctx).Err(); !isTimeout(err) {
		t.Errorf("PING through the paused client's link: %v, want a timeout", err)
	}
	if err := rc2.Ping(ctx).Err(); err != nil {
		t.Errorf("client 2 is not paused, but PING: %v", err)
	}
	select {
	case r := <-done:
		t.Fatalf("Point returned after %v (%v) while the pause lasts", r.took, r.err)
	default:
	}

	r := <-done
	t.Logf("Point held client 1 for %v (For %v)", r.took, pause)
	if r.err != nil {
		t.Errorf("Point after the pause = %v, want nil", r.err)
	}
	if r.took < pause*95/100 || r.took > pause+3*time.Second {
		t.Errorf("Point held the client %v, want about %v", r.took, pause)
	}
	s := checkLines(t, rec, "client-pause", "client-1")
	if s.Point != "cs:before-write" {
		t.Errorf("client-pause point = %q", s.Point)
	}
	if err := rc1.Ping(ctx).Err(); err != nil {
		t.Errorf("PING through client 1's link after the pause: %v", err)
	}
	// Times defaults to 1: the next client at the point passes at once.
	t0 := time.Now()
	if err := n.Point(ctx, 2, "cs:before-write"); err != nil || time.Since(t0) > pause/2 {
		t.Errorf("second Point = %v after %v; the fault fires once", err, time.Since(t0))
	}
	if got := len(rec.spans()); got != 1 {
		t.Errorf("%d occurrences recorded, want 1", got)
	}
}

// TestClientCrash shows that client-crash holds the client until its context ends, then returns
// ErrCrashed; that its links are black-holed meanwhile; and that no end line is ever recorded
// (the client died for good), though HealAll restores its links for the servers' sake.
func TestClientCrash(t *testing.T) {
	t.Parallel()
	c, env := redisPair(t, false)
	ctx := ctxT(t, 30*time.Second)
	rc1 := rclient(t, proxied(t, c, 1, 0), 300*time.Millisecond)

	n, rec := startNemesis(t, env, []faults.Spec{{Kind: "client-crash", Point: "cs:acquired"}}, 1)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := pointAsync(pctx, n, 1, "cs:acquired")
	s := rec.waitStart(t, "client-crash", 5*time.Second)
	if s.Target != "client-1" || s.Error != "" || s.Point != "cs:acquired" {
		t.Errorf("client-crash start line = %+v", s)
	}
	if err := rc1.Ping(ctx).Err(); !isTimeout(err) {
		t.Errorf("PING through the crashed client's link: %v, want a timeout", err)
	}
	select {
	case r := <-done:
		t.Fatalf("Point of a crashed client returned after %v: %v", r.took, r.err)
	case <-time.After(500 * time.Millisecond):
	}
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, faults.ErrCrashed) {
			t.Errorf("Point after ctx ended = %v, want ErrCrashed", r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Point did not return after its ctx ended")
	}

	n.HealAll()
	for _, e := range rec.all() {
		if e.Phase == history.PhaseEnd {
			t.Errorf("a crash has an end line: %+v", e)
		}
	}
	if s, _ := rec.span("client-crash"); s.End != history.Never {
		t.Errorf("client-crash span ends at %d, want never", s.End)
	}
	// A dead process stays dead: its links stay cut after HealAll too, or a ZooKeeper session the
	// client library still holds would come back to life and keep the lock for good.
	pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer pcancel()
	if err := rc1.Ping(pctx).Err(); err == nil {
		t.Errorf("PING through the crashed client's link answered after HealAll")
	}
}

// TestClockSkew shows that clock-skew sets the target clients' clock offset and resets it when it
// heals, whether it heals by its own For or by HealAll.
func TestClockSkew(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 3, Proxies: true})
	ctx := ctxT(t, 30*time.Second)

	t.Run("point until HealAll", func(t *testing.T) {
		env := &testEnv{c: c, clients: 3}
		n, rec := newNemesis(t, env, []faults.Spec{{Kind: "clock-skew", Point: "cs:acquired", Amount: sz(2 * time.Second)}}, 1)
		if err := n.Point(ctx, 2, "cs:acquired"); err != nil {
			t.Fatal(err)
		}
		if got, want := env.clockCalls(), []clockCall{{2, 2 * time.Second, 1}}; !slices.Equal(got, want) {
			t.Errorf("SetClock calls = %v, want %v", got, want)
		}
		n.HealAll()
		if got, want := env.clockCalls(), []clockCall{{2, 2 * time.Second, 1}, {2, 0, 1}}; !slices.Equal(got, want) {
			t.Errorf("SetClock calls after HealAll = %v, want %v", got, want)
		}
		checkLines(t, rec, "clock-skew", "client-2")
	})
	t.Run("timed with For, behind", func(t *testing.T) {
		env := &testEnv{c: c, clients: 3}
		_, rec := startNemesis(t, env, []faults.Spec{{Kind: "clock-skew", Clients: "1,3", Amount: sz(-1500 * time.Millisecond), For: sz(200 * time.Millisecond)}}, 1)
		rec.waitEnd(t, "clock-skew", 10*time.Second)
		want := []clockCall{{1, -1500 * time.Millisecond, 1}, {3, -1500 * time.Millisecond, 1}, {1, 0, 1}, {3, 0, 1}}
		if got := env.clockCalls(); !slices.Equal(got, want) {
			t.Errorf("SetClock calls = %v, want %v", got, want)
		}
		checkLines(t, rec, "clock-skew", "client-1,client-3")
	})
}

// TestSlowRelease shows that after the point, commands on the releasing client's links take at
// least the amount (other clients are not slowed), until heal.
func TestSlowRelease(t *testing.T) {
	t.Parallel()
	c, env := redisPair(t, false)
	ctx := ctxT(t, 30*time.Second)
	const amount = 400 * time.Millisecond
	rc1 := rclient(t, proxied(t, c, 1, 0), 3*time.Second)
	rc2 := rclient(t, proxied(t, c, 2, 0), 3*time.Second)
	for _, rc := range []*redis.Client{rc1, rc2} {
		if err := rc.Set(ctx, "lock", "held", 0).Err(); err != nil { // connections open before the point
			t.Fatal(err)
		}
	}

	n, rec := newNemesis(t, env, []faults.Spec{{Kind: "slow-release", Point: "cs:before-release", Amount: sz(amount)}}, 1)
	t0 := time.Now()
	if err := n.Point(ctx, 1, "cs:before-release"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > amount {
		t.Errorf("Point took %v: slow-release must not hold the client, only slow its links", d)
	}
	t0 = time.Now()
	if err := rc1.Del(ctx, "lock").Err(); err != nil {
		t.Fatal(err)
	}
	slow := time.Since(t0)

	t0 = time.Now()
	if err := rc2.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	other := time.Since(t0)
	n.HealAll()
	t0 = time.Now()
	if err := rc1.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	healed := time.Since(t0)
	t.Logf("DEL through client 1's link took %v (amount %v); client 2's PING %v; after heal %v", slow, amount, other, healed)
	if slow < amount {
		t.Errorf("DEL after the point took %v, want ≥ %v", slow, amount)
	}
	if other >= amount || healed >= amount {
		t.Errorf("client 2 (%v) or the healed link (%v) is slowed too", other, healed)
	}
	checkLines(t, rec, "slow-release", "client-1")
}
