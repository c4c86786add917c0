package faults_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

// TestWireHold shows a fault acting at one command on the wire, on a real redis-server
// (docs/design.md#wire-points): "before DEL" holds client 1's DEL — and only it: its GET and client 2's DEL pass at once —
// until another client reaches the fault's until point, and the DEL then executes; the start line
// names the command it held.
func TestWireHold(t *testing.T) {
	t.Parallel()
	c, env := redisPair(t, true)
	ctx := ctxT(t, 30*time.Second)
	direct := rclient(t, nodeAddr(t, c, "redis-1"), 2*time.Second)
	rc1 := rclient(t, proxied(t, c, 1, 0), 5*time.Second)
	rc2 := rclient(t, proxied(t, c, 2, 0), 2*time.Second)
	for _, k := range []string{"lock", "other"} {
		if err := direct.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	n, rec := startNemesis(t, env, []faults.Spec{{Kind: "latency", Client: 1, Amount: sz(3 * time.Second),
		Wire: &faults.Wire{Before: "DEL", Until: "cs:acquired"}}}, 1)

	if got, err := rc1.Get(ctx, "lock").Result(); err != nil || got != "v" {
		t.Fatalf("client 1's GET through the parsed link: %q, %v", got, err)
	}
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- rc1.Del(ctx, "lock").Err() }()
	rec.waitStart(t, "latency", 2*time.Second)
	if err := rc2.Del(ctx, "other").Err(); err != nil {
		t.Errorf("client 2's DEL is not aimed at, but: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if got := waitValue(ctx, direct, "lock", 0); got != "v" {
		t.Errorf("client 1's held DEL executed before the until point: the key is %q", got)
	}
	// Client 1 reaching the point does not end its own hold; client 2 reaching it does.
	_ = n.Point(ctx, 1, "cs:acquired")
	time.Sleep(100 * time.Millisecond)
	if got := waitValue(ctx, direct, "lock", 0); got != "v" {
		t.Errorf("the trigger's own point ended the hold: the key is %q", got)
	}
	_ = n.Point(ctx, 2, "cs:acquired")
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the held DEL: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the held DEL was not released when client 2 reached cs:acquired")
	}
	if d := time.Since(t0); d < 350*time.Millisecond || d > 2*time.Second {
		t.Errorf("the DEL took %v: want it held until the until point (≈400 ms), not its 3 s", d)
	}
	if got := waitValue(ctx, direct, "lock", 0); got != "" {
		t.Errorf("after the release the key is still %q: the DEL never executed", got)
	}
	n.HealAll()
	s := checkLines(t, rec, "latency", "client-1")
	if want := "DEL lock"; !contains(s.Detail, want) {
		t.Errorf("the fault line's detail %q does not name the command %q", s.Detail, want)
	}
}

// TestWireArmedByPoint shows a wire fault armed by a point: it fires at the first reply that
// succeeds after the client reached its point, not at earlier ones, and holds it for its amount.
func TestWireArmedByPoint(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 1, Proxies: true, Wire: true})
	env := &testEnv{c: c, clients: 1}
	ctx := ctxT(t, 30*time.Second)
	rc := rclient(t, proxied(t, c, 1, 0), 5*time.Second)
	ok := true
	const amount = 400 * time.Millisecond
	n, rec := startNemesis(t, env, []faults.Spec{{Kind: "latency", Point: "cs:before-acquire", Amount: sz(amount),
		Wire: &faults.Wire{AfterReply: "SET NX", OK: &ok}}}, 1)
	timed := func(f func() error) time.Duration {
		t0 := time.Now()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		return time.Since(t0)
	}
	if d := timed(func() error { return rc.SetNX(ctx, "k", "a", 0).Err() }); d > amount/2 {
		t.Errorf("a SET NX before the point was held %v", d)
	}
	_ = n.Point(context.Background(), 1, "cs:before-acquire")
	if d := timed(func() error { return rc.SetNX(ctx, "k", "b", 0).Err() }); d > amount/2 {
		t.Errorf("a SET NX that failed (the key exists) was held %v: ok: true matches only replies that succeeded", d)
	}
	if err := rc.Del(ctx, "k").Err(); err != nil {
		t.Fatal(err)
	}
	if d := timed(func() error { return rc.SetNX(ctx, "k", "c", 0).Err() }); d < amount*9/10 {
		t.Errorf("the winning SET NX's reply came after %v: want it held %v", d, amount)
	}
	if d := timed(func() error { return rc.SetNX(ctx, "k2", "d", 0).Err() }); d > amount/2 {
		t.Errorf("a second winning SET NX was held %v: the fault fires once", d)
	}
	n.HealAll()
	checkLines(t, rec, "latency", "client-1")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestUntil shows a fault that holds its client at its point (client-stall) end when another
// client reaches its until point — not when the held client itself does — and its For bound it
// when nobody does.
func TestUntil(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 2})
	env := &testEnv{c: c, clients: 2}
	n, _ := startNemesis(t, env, []faults.Spec{{Kind: "client-stall", Point: "cs:acquired", Times: 2, For: sz(2 * time.Second),
		Until: "cs:before-read"}}, 1)
	ctx := context.Background()
	released := make(chan time.Duration, 1)
	t0 := time.Now()
	go func() {
		_ = n.Point(ctx, 1, "cs:acquired") // held until client 2 reads
		released <- time.Since(t0)
	}()
	time.Sleep(200 * time.Millisecond)
	_ = n.Point(ctx, 1, "cs:before-read") // its own point does not end it
	select {
	case d := <-released:
		t.Fatalf("the stall ended after %v, when its own client reached the until point", d)
	case <-time.After(100 * time.Millisecond):
	}
	_ = n.Point(ctx, 2, "cs:before-read")
	select {
	case d := <-released:
		if d > time.Second {
			t.Errorf("the stall ended after %v: want at client 2's point (≈300 ms)", d)
		}
	case <-time.After(time.Second):
		t.Fatal("the stall did not end when client 2 reached cs:before-read")
	}
	t1 := time.Now()
	_ = n.Point(ctx, 2, "cs:acquired") // the second occurrence: nobody reaches the point
	if d := time.Since(t1); d < 2*time.Second*9/10 {
		t.Errorf("with nobody reaching the until point the stall lasted %v, want its For (2 s)", d)
	}
}

// TestUntilHealsAPartition: a partition at a point heals when another client reaches its until
// point — counted only once its at-least has passed — and what the cut-off client sent under it
// then executes, on a real redis-server: the catalogue's partition, whose held release lands
// when the next holder holds.
func TestUntilHealsAPartition(t *testing.T) {
	t.Parallel()
	c, env := redisPair(t, false)
	ctx := ctxT(t, 30*time.Second)
	direct := rclient(t, nodeAddr(t, c, "redis-1"), 2*time.Second)
	rc1 := rclient(t, proxied(t, c, 1, 0), 10*time.Second)
	if err := direct.Set(ctx, "lock", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc1.Ping(ctx).Err(); err != nil { // the connection exists before the cut
		t.Fatal(err)
	}
	const atLeast = 600 * time.Millisecond
	n, rec := startNemesis(t, env, []faults.Spec{{Kind: "partition", Point: "cs:acquired", Clients: "trigger",
		For: sz(5 * time.Second), AtLeast: sz(atLeast), Until: "cs:before-read"}}, 1)
	t0 := time.Now()
	_ = n.Point(ctx, 1, "cs:acquired")
	s := rec.waitStart(t, "partition", 2*time.Second)
	if !contains(s.Detail, "at least 600ms, then until another client reached cs:before-read (at most 5s)") {
		t.Errorf("the start line's detail %q does not say when it heals", s.Detail)
	}
	done := make(chan error, 1)
	go func() { done <- rc1.Del(ctx, "lock").Err() }()
	// Another client holding before at-least has passed does not heal it, nor does the trigger.
	_ = n.Point(ctx, 2, "cs:before-read")
	_ = n.Point(ctx, 1, "cs:before-read")
	time.Sleep(time.Until(t0.Add(atLeast + 200*time.Millisecond)))
	_ = n.Point(ctx, 1, "cs:before-read")
	time.Sleep(100 * time.Millisecond)
	if sp, ok := rec.span("partition"); ok && sp.End != history.Never {
		t.Fatalf("the partition healed %v after it began, before another client reached cs:before-read after at-least",
			time.Duration(sp.End-sp.Start))
	}
	if got := waitValue(ctx, direct, "lock", 0); got != "v" {
		t.Fatalf("the cut-off client's DEL executed under the partition: the key is %q", got)
	}
	t1 := time.Now()
	_ = n.Point(ctx, 2, "cs:before-read")
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the held DEL: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the partition did not heal when client 2 reached cs:before-read after at-least")
	}
	if d := time.Since(t1); d > time.Second {
		t.Errorf("the held DEL executed %v after client 2's point", d)
	}
	if got := waitValue(ctx, direct, "lock", 0); got != "" {
		t.Errorf("after the heal the key is %q: the held DEL did not execute", got)
	}
	rec.waitEnd(t, "partition", time.Second)
}

// TestUntilValidated: until is for the faults that hold a client and the network faults at a
// point, and names a harness point; at-least needs until and is shorter than for.
func TestUntilValidated(t *testing.T) {
	for _, tc := range []struct {
		s    faults.Spec
		want string
	}{
		{faults.Spec{Kind: "client-stall", Point: "cs:acquired", For: sz(time.Second), Until: "cs:before-read"}, ""},
		{faults.Spec{Kind: "restart", Point: "cs:acquired", Nodes: "master", Until: "cs:before-read"}, "only for faults that hold a client"},
		{faults.Spec{Kind: "client-crash", Point: "cs:acquired", Until: "cs:before-read"}, "only for faults that hold a client"},
		{faults.Spec{Kind: "partition", Point: "cs:acquired", For: sz(time.Second), Until: "cs:before-read", AtLeast: sz(500 * time.Millisecond)}, ""},
		{faults.Spec{Kind: "client-stall", Point: "cs:acquired", For: sz(time.Second), Until: "cs:before-read", AtLeast: sz(500 * time.Millisecond)}, ""},
		{faults.Spec{Kind: "latency", Point: "cs:acquired", Amount: sz(time.Second), Until: "cs:before-read"}, ""},
		{faults.Spec{Kind: "partition", Nodes: "master", For: sz(time.Second), Until: "cs:before-read"}, "until needs point"},
		{faults.Spec{Kind: "partition", Point: "cs:acquired", AtLeast: sz(time.Second)}, "at-least needs until"},
		{faults.Spec{Kind: "refuse", Point: "cs:acquired", For: sz(time.Second), Until: "cs:before-read", AtLeast: sz(time.Second)}, "must be shorter than for"},
		{faults.Spec{Kind: "client-stall", Point: "cs:acquired", For: sz(time.Second), Until: "acquire:after-set"}, "must be a harness point"},
		{faults.Spec{Kind: "restart", Nodes: "master", Wire: &faults.Wire{Before: "DEL"}}, "cannot act at a wire point"},
		{faults.Spec{Kind: "client-crash", Wire: &faults.Wire{AfterReply: "SETNX"}}, ""}, // a crash needs no bound
		{faults.Spec{Kind: "client-pause", Wire: &faults.Wire{AfterReply: "SETNX"}}, "must be > 0"},
		{faults.Spec{Kind: "latency", Amount: sz(time.Second), Wire: &faults.Wire{}}, "exactly one of before"},
		{faults.Spec{Kind: "latency", Amount: sz(time.Second), Wire: &faults.Wire{Before: "DEL", OK: new(bool)}}, "only meaningful with after-reply"},
	} {
		err := tc.s.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.s, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one saying %q", tc.s, err, tc.want)
		}
	}
}
