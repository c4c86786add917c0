package faults_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

// TestTimedSchedule shows that timed faults fire near At, repeat by Every up to Times, and heal
// near At+For, in order. Bounds are coarse: this is a loaded machine.
func TestTimedSchedule(t *testing.T) {
	t.Parallel()
	_, env := redisPair(t, false)
	const at, dur = 500 * time.Millisecond, 700 * time.Millisecond
	specs := []faults.Spec{
		{Kind: "clock-skew", Clients: "1", Amount: sz(time.Second), At: ms(at), For: sz(dur)},
		{Kind: "partition", Clients: "2", Nodes: "redis-1", At: ms(200 * time.Millisecond),
			Every: ms(400 * time.Millisecond), Times: 3, For: sz(100 * time.Millisecond)},
	}
	n, rec := newNemesis(t, env, specs, 1)
	wantPlan := []time.Duration{200 * time.Millisecond, at, 600 * time.Millisecond, 1000 * time.Millisecond}
	var gotPlan []time.Duration
	for _, p := range n.Schedule() {
		gotPlan = append(gotPlan, p.At)
	}
	if !slices.Equal(gotPlan, wantPlan) {
		t.Fatalf("Schedule = %v, want %v", gotPlan, wantPlan)
	}
	started := rec.now()
	if err := n.Start(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		spans := rec.spans()
		if len(spans) == 4 && !slices.ContainsFunc(spans, func(s history.FaultSpan) bool { return s.End == history.Never }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every occurrence started and ended: %+v", spans)
		}
		time.Sleep(20 * time.Millisecond)
	}
	n.HealAll()

	spans := rec.spans()
	var parts []history.FaultSpan
	for i, s := range spans {
		rel := func(ns int64) time.Duration { return time.Duration(ns - started).Round(time.Millisecond) }
		t.Logf("%d %s %s: %v → %v", i, s.Name, s.Target, rel(s.Start), rel(s.End))
		if s.Error != "" {
			t.Errorf("%s failed: %s", s.Name, s.Error)
		}
		if i > 0 && s.Start < spans[i-1].Start {
			t.Errorf("occurrence %d started before occurrence %d", i, i-1)
		}
		if s.Name == "partition" {
			parts = append(parts, s)
		}
	}
	skew, _ := rec.span("clock-skew")
	if s, e := time.Duration(skew.Start-started), time.Duration(skew.End-started); s < at || s > at+1500*time.Millisecond || e < at+dur || e > s+dur+2*time.Second {
		t.Errorf("clock-skew ran %v → %v, want about %v → %v", s, e, at, at+dur)
	}
	if len(parts) != 3 {
		t.Fatalf("partition fired %d times, want 3", len(parts))
	}
	for i, p := range parts {
		if want := 200*time.Millisecond + time.Duration(i)*400*time.Millisecond; time.Duration(p.Start-started) < want {
			t.Errorf("partition %d started at %v, before %v", i, time.Duration(p.Start-started), want)
		}
		if p.End-p.Start < int64(100*time.Millisecond) || p.Target != "client-2 → redis-1" {
			t.Errorf("partition %d = %+v, want ≥ 100ms on client-2 → redis-1", i, p)
		}
	}
	if got := env.clockCalls(); !slices.Equal(got, []clockCall{{1, time.Second, 1}, {1, 0, 1}}) {
		t.Errorf("SetClock calls = %v", got)
	}
}

// TestPointSelection shows which Point calls fire an event-triggered fault: only the spec's
// client (Client), after Skip occurrences, at most Times times.
func TestPointSelection(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 3, Proxies: true})
	env := &testEnv{c: c, clients: 3}
	ctx := ctxT(t, 10*time.Second)
	n, rec := newNemesis(t, env, []faults.Spec{
		{Kind: "clock-skew", Point: "cs:acquired", Client: 2, Skip: 1, Times: 2, Amount: sz(time.Second), Clients: "others"},
	}, 1)
	for _, call := range []struct {
		client int
		point  string
	}{{1, "cs:acquired"}, {2, "cs:before-write"}, {2, "cs:acquired"}, {2, "cs:acquired"}, {3, "cs:acquired"}, {2, "cs:acquired"}, {2, "cs:acquired"}} {
		if err := n.Point(ctx, call.client, call.point); err != nil {
			t.Fatalf("Point(%d, %s) = %v", call.client, call.point, err)
		}
	}
	n.HealAll()
	spans := rec.spans()
	if len(spans) != 2 {
		t.Fatalf("fired %d times, want 2 (client 2's 2nd and 3rd cs:acquired): %+v", len(spans), spans)
	}
	for _, s := range spans {
		if s.Target != "client-1,client-3" || s.End == history.Never || s.Error != "" {
			t.Errorf("occurrence %+v, want others of client 2, healed", s)
		}
	}
}

// TestPointFromAt: a fault at a point with At watches for the point only from At on, and Skip
// counts the occurrences from then (a soak aims point faults at moments of the run so).
func TestPointFromAt(t *testing.T) {
	t.Parallel()
	_, env := redisPair(t, false)
	ctx := ctxT(t, 10*time.Second)
	n, rec := newNemesis(t, env, []faults.Spec{
		{Kind: "clock-skew", Point: "cs:acquired", Skip: 1, At: ms(300 * time.Millisecond), Amount: sz(time.Second)},
	}, 1)
	point := func(client int) {
		if err := n.Point(ctx, client, "cs:acquired"); err != nil {
			t.Fatalf("Point(%d) = %v", client, err)
		}
	}
	for range 3 { // before At: not seen
		point(1)
	}
	if got := len(rec.spans()); got != 0 {
		t.Fatalf("fired %d times before At, want 0", got)
	}
	time.Sleep(time.Until(rec.t0.Add(300 * time.Millisecond)))
	point(1) // the first after At: skipped
	if got := len(rec.spans()); got != 0 {
		t.Fatalf("fired at the first occurrence after At, want it skipped (skip 1)")
	}
	point(2)
	n.HealAll()
	spans := rec.spans()
	if len(spans) != 1 || spans[0].Target != "client-2" || spans[0].Start < int64(300*time.Millisecond) {
		t.Fatalf("occurrences %+v, want one on client 2 after 300ms", spans)
	}
}

// pointsDuringAStall runs specs (the first a client-stall at cs:acquired) and has client 1 reach
// cs:acquired, then client 2 while client 1 is stalled; it returns the occurrences.
func pointsDuringAStall(t *testing.T, specs []faults.Spec) []history.FaultSpan {
	t.Helper()
	_, env := redisPair(t, false)
	ctx := ctxT(t, 10*time.Second)
	n, rec := newNemesis(t, env, specs, 1)
	first := make(chan error, 1)
	go func() { first <- n.Point(ctx, 1, "cs:acquired") }()
	rec.waitStart(t, "client-stall", 5*time.Second)
	if err := n.Point(ctx, 2, "cs:acquired"); err != nil { // during client 1's stall
		t.Fatalf("Point(2) = %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("Point(1) = %v", err)
	}
	n.HealAll()
	return rec.spans()
}

// TestPointFaultsGoToOneClient: the faults one occurrence of a point triggers all hit its client,
// even when another client reaches the point while the first of them is in force (the session
// kill and the stall at cs:acquired of session-kill once split between two clients so).
func TestPointFaultsGoToOneClient(t *testing.T) {
	t.Parallel()
	spans := pointsDuringAStall(t, []faults.Spec{
		{Kind: "client-stall", Point: "cs:acquired", For: sz(300 * time.Millisecond)},
		{Kind: "clock-skew", Point: "cs:acquired", Amount: sz(time.Second)},
	})
	if len(spans) != 2 {
		t.Fatalf("%d occurrences %+v, want 2 (client 2's point triggers nothing: each rule fires once)", len(spans), spans)
	}
	for _, s := range spans {
		if s.Target != "client-1" {
			t.Errorf("%s on %s, want it on client 1, whose point triggered both", s.Name, s.Target)
		}
	}
}

// TestPointPausesGoToSeveralClients: an occurrence of a point takes one blocking fault at most;
// the next pause at the point goes to the next client that reaches it (getset-race stops four
// waiters so), and a non-blocking fault still goes with the first.
func TestPointPausesGoToSeveralClients(t *testing.T) {
	t.Parallel()
	spans := pointsDuringAStall(t, []faults.Spec{
		{Kind: "client-stall", Point: "cs:acquired", For: sz(300 * time.Millisecond)},
		{Kind: "client-stall", Point: "cs:acquired", For: sz(100 * time.Millisecond)},
		{Kind: "clock-skew", Point: "cs:acquired", Amount: sz(time.Second)},
	})
	var stalled []string
	for _, s := range spans {
		switch s.Name {
		case "client-stall":
			stalled = append(stalled, s.Target)
		case "clock-skew":
			if s.Target != "client-1" {
				t.Errorf("clock-skew on %s, want client 1, whose point also took the first stall", s.Target)
			}
		}
	}
	slices.Sort(stalled)
	if !slices.Equal(stalled, []string{"client-1", "client-2"}) {
		t.Errorf("stalls on %v, want one on each of clients 1 and 2", stalled)
	}
}

// TestPlanDeterministic shows that Plan is a pure function of specs and seed, and that the seed
// drives the random draws (jitter, "random" selectors).
func TestPlanDeterministic(t *testing.T) {
	specs := []faults.Spec{
		{Kind: "latency", Nodes: "random", Amount: sz(50 * time.Millisecond), At: ms(100 * time.Millisecond),
			Every: ms(300 * time.Millisecond), Times: -1, For: sz(100 * time.Millisecond), Jitter: ms(200 * time.Millisecond)},
		{Kind: "kill", Nodes: "random", At: ms(time.Second)},
		{Kind: "client-pause", Point: "cs:acquired", For: sz(time.Second)}, // event-triggered: not planned
	}
	const d = 5 * time.Second
	a, b, other := faults.Plan(specs, 42, d), faults.Plan(specs, 42, d), faults.Plan(specs, 43, d)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different plans:\n%+v\n%+v", a, b)
	}
	if reflect.DeepEqual(a, other) {
		t.Errorf("seeds 42 and 43 give the same plan %+v", a)
	}
	if len(a) != 18 { // latency at 100ms, 400ms, … 4.9s (17), kill at 1s
		t.Errorf("%d occurrences planned, want 18: %+v", len(a), a)
	}
	kills := 0
	for i, p := range a {
		if i > 0 && p.At < a[i-1].At {
			t.Errorf("plan not sorted by At at %d: %+v", i, a)
		}
		if p.At > d || p.Kind == "client-pause" {
			t.Errorf("planned %+v", p)
		}
		if p.Kind == "kill" {
			kills++
		}
		if p.Kind == "latency" && (p.Extra < 0 || p.Extra >= 200*time.Millisecond) {
			t.Errorf("jitter extra %v outside [0, 200ms)", p.Extra)
		}
	}
	if kills != 1 {
		t.Errorf("kill planned %d times, want once", kills)
	}
	env := &testEnv{clients: 1}
	n, err := faults.New(env, specs, faults.Options{Seed: 42, Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(n.Schedule(), a) {
		t.Error("New's Schedule differs from Plan with the same seed")
	}
}

// TestRandomSelectorsFollowTheSeed fires a fault with "random" client and node selectors on a real
// 5-node cluster: the same seed picks the same targets, different seeds spread over them.
func TestRandomSelectorsFollowTheSeed(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisMulti, Nodes: 5, Clients: 3, Proxies: true})
	env := &testEnv{c: c, clients: 3}
	target := func(seed int64) string {
		n, rec := startNemesis(t, env, []faults.Spec{{Kind: "latency", Clients: "random", Nodes: "random", Amount: sz(time.Millisecond)}}, seed)
		s := rec.waitStart(t, "latency", 5*time.Second)
		n.HealAll()
		if s.Error != "" {
			t.Errorf("seed %d: %s", seed, s.Error)
		}
		return s.Target
	}
	seen := map[string]bool{}
	for seed := int64(1); seed <= 6; seed++ {
		a, b := target(seed), target(seed)
		if a != b {
			t.Errorf("seed %d picked %q, then %q", seed, a, b)
		}
		seen[a] = true
	}
	t.Logf("targets over 6 seeds: %v", seen)
	if len(seen) < 2 {
		t.Errorf("6 seeds all picked %v", seen)
	}
}

// TestFailedFaultsAreRecorded shows that a fault that cannot be injected is never a silent no-op:
// it is a start line with the error and an end line, and the run goes on (Point returns nil and
// the next fault at the same point still fires).
func TestFailedFaultsAreRecorded(t *testing.T) {
	t.Parallel()
	proxied := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 2, Proxies: true})
	direct := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 2})
	closed := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 2})
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 20*time.Second)
	for _, tc := range []struct {
		name string
		c    cluster.Cluster
		spec faults.Spec
		want string // in the error
	}{
		{"kill of an unknown node", proxied, faults.Spec{Kind: "kill", Nodes: "redis-9"}, `no node "redis-9"`},
		{"restart after Close", closed, faults.Spec{Kind: "restart", Nodes: "redis-1"}, "redis-1"},
		{"partition without proxies", direct, faults.Spec{Kind: "partition", Clients: "1", Nodes: "redis-1"}, "proxies are off"},
		{"client-pause without proxies", direct, faults.Spec{Kind: "client-pause", For: sz(time.Hour)}, "proxies are off"},
		{"failover on redis-single", proxied, faults.Spec{Kind: "failover"}, "replication"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &testEnv{c: tc.c, clients: 2}
			tc.spec.Point = "cs:acquired"
			next := faults.Spec{Kind: "clock-skew", Point: "cs:acquired", Amount: sz(time.Second)}
			n, rec := newNemesis(t, env, []faults.Spec{tc.spec, next}, 1)
			if tc.spec.Kind == "failover" {
				// failover fails when armed: Start reports it, and records it too.
				err := n.Start(ctx)
				if err == nil {
					t.Fatal("Start armed failover on a cluster without replication")
				}
				checkFailed(t, rec, "failover:arm", tc.want)
				return
			}
			t0 := time.Now()
			if err := n.Point(ctx, 1, "cs:acquired"); err != nil {
				t.Errorf("Point = %v, want nil (the run goes on)", err)
			}
			if d := time.Since(t0); d > 5*time.Second {
				t.Errorf("Point held the client %v for a fault that failed", d)
			}
			n.HealAll()
			checkFailed(t, rec, tc.spec.Kind, tc.want)
			checkLines(t, rec, "clock-skew", "client-1")
		})
	}
}

// checkFailed asserts that fault name was recorded with an error containing want, and ended.
func checkFailed(t *testing.T, rec *recorder, name, want string) {
	t.Helper()
	var start, end *history.Event
	events := rec.all()
	for i, e := range events {
		if e.Name == name && e.Phase == history.PhaseStart {
			start = &events[i]
		}
		if start != nil && e.Fault == start.Fault && e.Phase == history.PhaseEnd {
			end = &events[i]
		}
	}
	switch {
	case start == nil:
		t.Fatalf("no start line for %s: %+v", name, events)
	case !strings.Contains(start.Error, want):
		t.Errorf("%s start error = %q, want it to say %q", name, start.Error, want)
	case end == nil:
		t.Errorf("%s has no end line: %+v", name, events)
	case end.Error == "":
		t.Errorf("%s end line has no error: %+v", name, end)
	}
	if start != nil {
		t.Logf("%s recorded: %s", name, start.Error)
	}
}

// nodesOnly is a cluster with no nodes, enough for faults that act on clients only (clock-skew).
type nodesOnly struct{ cluster.Cluster }

func (nodesOnly) Nodes() []cluster.Node { return nil }

// TestOneEndLinePerOccurrence races HealAll against faults whose For runs out at the same moment:
// each occurrence must still get exactly one end line.
func TestOneEndLinePerOccurrence(t *testing.T) {
	const k = 200
	for round := 0; round < 5; round++ {
		env := &testEnv{c: nodesOnly{}, clients: 1}
		specs := make([]faults.Spec, k)
		for i := range specs {
			specs[i] = faults.Spec{Kind: "clock-skew", Point: "p", Amount: sz(time.Second), For: sz(20 * time.Millisecond)}
		}
		n, rec := newNemesis(t, env, specs, 1)
		ctx := ctxT(t, 10*time.Second)
		if err := n.Point(ctx, 1, "p"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		n.HealAll()
		ends := map[int64]int{}
		for _, e := range rec.all() {
			if e.Phase == history.PhaseEnd {
				ends[e.Fault]++
			}
		}
		if len(ends) != k {
			t.Errorf("round %d: %d occurrences ended, want %d", round, len(ends), k)
		}
		for id, c := range ends {
			if c != 1 {
				t.Fatalf("round %d: occurrence %d has %d end lines", round, id, c)
			}
		}
		if calls := env.clockCalls(); len(calls) != 2*k {
			t.Errorf("round %d: %d SetClock calls, want %d (one skew and one reset each)", round, len(calls), 2*k)
		}
	}
}

// TestForOutlivesTheTriggeringCall fires a lasting fault at a point whose ctx ends right after
// (an algorithm's point inside Acquire, whose timeout ctx is cancelled when Acquire returns): the
// fault must still heal after For, not linger until HealAll.
func TestForOutlivesTheTriggeringCall(t *testing.T) {
	env := &testEnv{c: nodesOnly{}, clients: 1}
	const dur = 200 * time.Millisecond
	n, rec := newNemesis(t, env, []faults.Spec{{Kind: "clock-skew", Point: "acquire:after-setnx", Amount: sz(time.Second), For: sz(dur)}}, 1)
	actx, cancel := context.WithTimeout(context.Background(), time.Second)
	if err := n.Point(actx, 1, "acquire:after-setnx"); err != nil {
		t.Fatal(err)
	}
	cancel() // Acquire returned
	s := rec.waitEnd(t, "clock-skew", 5*time.Second)
	if d := time.Duration(s.End - s.Start); d < dur {
		t.Errorf("healed after %v, want ≥ %v", d, dur)
	}
	if got := env.clockCalls(); !slices.Equal(got, []clockCall{{1, time.Second, 1}, {1, 0, 1}}) {
		t.Errorf("SetClock calls = %v, want the skew and its reset", got)
	}
}

// TestStartLinesCarryTheirMeaning: a start line says what the fault acts on and whom it
// targeted, as resolved, in fields (the checker reads no name or target text).
func TestStartLinesCarryTheirMeaning(t *testing.T) {
	env := &testEnv{c: nodesOnly{}, clients: 3}
	n, rec := newNemesis(t, env, []faults.Spec{
		{Kind: "clock-skew", Point: "cs:acquired", Clients: "others", Amount: sz(time.Second), For: sz(time.Millisecond)},
	}, 1)
	if err := n.Point(ctxT(t, 5*time.Second), 2, "cs:acquired"); err != nil {
		t.Fatal(err)
	}
	n.HealAll()
	var starts []history.Event
	for _, e := range rec.all() {
		if e.Phase == history.PhaseStart {
			starts = append(starts, e)
		}
	}
	want := history.FaultMeaning{ActsOn: history.ActsOnClock, TargetClients: []int{1, 3}}
	if len(starts) != 1 || !reflect.DeepEqual(starts[0].FaultMeaning, want) || starts[0].Target != "client-1,client-3" {
		t.Fatalf("start lines %+v, want one with %+v", starts, want)
	}
	if m := faults.MeaningOf(faults.Spec{Kind: "client-crash"}); m.ActsOn != history.ActsOnProcess || !m.Lasting {
		t.Errorf("client-crash means %+v, want a process fault that lasts the run", m)
	}
}

// TestFinishLetsALateFaultServeItsFor: faults that fired just before the end of the fault phase
// — a blocking one (client-stall, held at its point) and a kept one (clock-skew) — last their
// whole For when the phase ends with Finish, and are cut short by HealAll alone.
func TestFinishLetsALateFaultServeItsFor(t *testing.T) {
	const dur = 300 * time.Millisecond
	for _, finish := range []bool{true, false} {
		env := &testEnv{c: nodesOnly{}, clients: 2}
		n, rec := newNemesis(t, env, []faults.Spec{
			{Kind: "client-stall", Point: "p", Client: 1, For: sz(dur)},
			{Kind: "clock-skew", Point: "p", Client: 2, Amount: sz(time.Second), For: sz(dur)},
		}, 1)
		ctx := ctxT(t, 10*time.Second)
		held := make(chan error, 1)
		go func() { held <- n.Point(ctx, 1, "p") }()
		if err := n.Point(ctx, 2, "p"); err != nil {
			t.Fatal(err)
		}
		rec.waitStart(t, "client-stall", 5*time.Second)
		t0 := time.Now()
		if finish {
			n.Finish(ctx)
		}
		n.HealAll()
		if err := <-held; err != nil {
			t.Fatalf("the stalled client's point: %v", err)
		}
		for _, name := range []string{"client-stall", "clock-skew"} {
			s := rec.waitEnd(t, name, 5*time.Second)
			d := time.Duration(s.End - s.Start)
			if finish && d < dur {
				t.Errorf("with Finish, %s lasted %v, want its For %v", name, d, dur)
			}
			if !finish && d >= dur {
				t.Errorf("without Finish, %s lasted %v: HealAll should have cut it (the test proves nothing)", name, d)
			}
		}
		if finish {
			if d := time.Since(t0); d > dur+2*time.Second {
				t.Errorf("Finish waited %v, longer than the faults' For %v", d, dur)
			}
		}
	}
}

// TestFinishWithNothingInForce returns at once.
func TestFinishWithNothingInForce(t *testing.T) {
	n, _ := newNemesis(t, &testEnv{c: nodesOnly{}, clients: 1}, []faults.Spec{{Kind: "client-crash", Point: "never"}}, 1)
	t0 := time.Now()
	n.Finish(ctxT(t, 10*time.Second))
	if d := time.Since(t0); d > time.Second {
		t.Errorf("Finish with no fault in force took %v", d)
	}
	n.HealAll()
}
