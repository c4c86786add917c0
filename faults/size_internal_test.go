package faults

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"gopkg.in/yaml.v3"
)

func TestParseSize(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		in   string
		want Size
		str  string
	}{
		{"900ms", Fixed(900 * ms), "900ms"},
		{"lease", Size{Leases: 1}, "lease"},
		{"lease+400ms", Size{Fixed: 400 * ms, Leases: 1}, "lease+400ms"},
		{"1.5lease", Size{Leases: 1.5}, "1.5lease"},
		{"2 leases + renewal + 300ms", Size{Fixed: 300 * ms, Leases: 2, Renewals: 1}, "2lease+renewal+300ms"},
		{"3*lease", Size{Leases: 3}, "3lease"},
		{"-1.5s", Fixed(-1500 * ms), "-1.5s"},
	} {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if got.String() != tc.str {
			t.Errorf("%q.String() = %q, want %q", tc.in, got.String(), tc.str)
		}
		if back, err := ParseSize(got.String()); err != nil || back != got {
			t.Errorf("%q does not read back: %+v, %v", got.String(), back, err)
		}
	}
	for _, bad := range []string{"", "lease+", "xlease", "1.5", "lease+1.5", "-"} {
		if _, err := ParseSize(bad); err == nil || !strings.Contains(err.Error(), "lease+400ms") {
			t.Errorf("ParseSize(%q): %v, want an error that shows how to write a size", bad, err)
		}
	}
	// A scenario file writes sizes in leases; an absent one stays absent in JSON and YAML.
	var s Spec
	if err := yaml.Unmarshal([]byte("kind: client-pause\npoint: cs:before-write\nfor: lease+400ms\n"), &s); err != nil {
		t.Fatal(err)
	}
	if s.For != (Size{Fixed: 400 * ms, Leases: 1}) || !s.Amount.IsZero() {
		t.Errorf("YAML for: lease+400ms = %+v (amount %+v)", s.For, s.Amount)
	}
	js, _ := json.Marshal(s)
	if string(js) != `{"kind":"client-pause","point":"cs:before-write","for":"lease+400ms"}` {
		t.Errorf("JSON %s", js)
	}
	ys, _ := yaml.Marshal(s)
	if strings.Contains(string(ys), "amount") || !strings.Contains(string(ys), "for: lease+400ms") {
		t.Errorf("YAML %s", ys)
	}
	if got := s.Sized(time.Second, 0).For.D(); got != 1400*ms {
		t.Errorf("lease+400ms at a 1 s lease = %v, want 1.4s", got)
	}
	if got := (Size{Fixed: 300 * ms, Leases: 2, Renewals: 1}).Resolve(time.Second, 333*ms); got != 2633*ms {
		t.Errorf("2lease+renewal+300ms at 1 s renewed every 333 ms = %v, want 2.633s", got)
	}
}

// leaseEnv is bareEnv with the lock's lease settable, as a client reporting Lease.TTL sets it.
type leaseEnv struct {
	bareEnv
	lease atomic.Int64
}

func (e *leaseEnv) Lease() time.Duration { return time.Duration(e.lease.Load()) }

// stallRun fires specs (client-stalls at point "p") on a nemesis over env and returns its lines.
type stallRun struct {
	n      *Nemesis
	mu     sync.Mutex
	events []history.Event
}

func newStallRun(t *testing.T, env Env, specs ...Spec) *stallRun {
	t.Helper()
	r := &stallRun{}
	t0 := time.Now()
	n, err := New(env, specs, Options{Now: func() int64 { return int64(time.Since(t0)) },
		Record: func(e history.Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	r.n = n
	return r
}

func (r *stallRun) spans() []history.FaultSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return history.Faults(r.events)
}

// TestFaultSizedFromTheLease: a stall of lease+100ms lasts 1.1 s when the lock holds a 1 s lease
// (not the 600 ms a 500 ms TTL would give), and its start line records the lease it must outlast.
func TestFaultSizedFromTheLease(t *testing.T) {
	env := &leaseEnv{}
	env.lease.Store(int64(time.Second))
	r := newStallRun(t, env, Spec{Kind: "client-stall", Point: "p", For: Leases(1, 100*time.Millisecond)})
	t0 := time.Now()
	if err := r.n.Point(context.Background(), 1, "p"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	r.n.HealAll()
	if took < 1100*time.Millisecond || took > 2*time.Second {
		t.Errorf("the stall held its client %v, want lease+100ms = 1.1s", took)
	}
	s := r.spans()
	if len(s) != 1 || s[0].OutlastNs != int64(time.Second) || s[0].Missed != "" {
		t.Errorf("spans %+v, want one that must outlast 1s and missed nothing", s)
	}
}

// TestUntilNeverReachedIsRecorded: a stall that waits for another client at cs:before-read and
// ends by its cap says so on its end line (history.Event.Missed); one that another client's
// point ends says nothing.
func TestUntilNeverReachedIsRecorded(t *testing.T) {
	env := &leaseEnv{}
	env.lease.Store(int64(100 * time.Millisecond))
	stall := Spec{Kind: "client-stall", Point: "p", Until: "cs:before-read", For: Leases(2, 0), Times: 2}
	r := newStallRun(t, env, stall)
	if err := r.n.Point(context.Background(), 1, "p"); err != nil { // capped: nobody comes
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.n.Point(context.Background(), 1, "p") }()
	time.Sleep(50 * time.Millisecond)
	_ = r.n.Point(context.Background(), 2, "cs:before-read")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.n.HealAll()
	s := r.spans()
	if len(s) != 2 {
		t.Fatalf("spans %+v, want two", s)
	}
	if !strings.Contains(s[0].Missed, "no other client reached cs:before-read") {
		t.Errorf("the capped stall's end line missed = %q, want it to say its until never came", s[0].Missed)
	}
	if s[1].Missed != "" {
		t.Errorf("the stall another client ended missed %q, want nothing", s[1].Missed)
	}
}

// TestFaultShorterThanTheLeaseIsRecorded: a stall sized lease+50ms at a 100 ms lease, under a
// lock that turns out to hold a 1 s lease meanwhile (a later grant reported it), lasted less
// than the lease it must outlast, and its end line says so.
func TestFaultShorterThanTheLeaseIsRecorded(t *testing.T) {
	env := &leaseEnv{}
	env.lease.Store(int64(100 * time.Millisecond))
	r := newStallRun(t, env, Spec{Kind: "client-stall", Point: "p", For: Leases(1, 50*time.Millisecond)})
	go func() {
		time.Sleep(20 * time.Millisecond)
		env.lease.Store(int64(time.Second))
	}()
	if err := r.n.Point(context.Background(), 1, "p"); err != nil {
		t.Fatal(err)
	}
	r.n.HealAll()
	s := r.spans()
	if len(s) != 1 || !strings.Contains(s[0].Missed, "less than the lease it must outlast (1s)") {
		t.Errorf("spans %+v, want one whose end line says it was shorter than the 1s lease", s)
	}
}

// redisLeaseEnv is leaseEnv on a redis-single, whose lease is a key's TTL.
type redisLeaseEnv struct{ leaseEnv }

type redisNodes struct{ noNodes }

func (redisNodes) Topology() string { return cluster.RedisSingle }

func (*redisLeaseEnv) Cluster() cluster.Cluster { return redisNodes{} }

// lateKind is a restart-like kind for tests: its occurrence takes took to inject, heals itself,
// and must be over within the holder's lease (WithinLease).
type lateKind struct{ took time.Duration }

func (k lateKind) Name() string                    { return "test-late-restart" }
func (lateKind) Available(cluster.Topology) string { return "" }
func (lateKind) WithinLease() bool                 { return true }
func (k lateKind) Inject(context.Context, Env, Target) (Heal, error) {
	time.Sleep(k.took)
	return nil, nil
}

// TestLateRestartIsRecorded: a restart at a holder's point that took as long as the holder's
// lease says so on its end line (history.Event.Missed): the server came back after the lock it
// was to forget could have expired (token × restart on docker, safe with a 5 s restart under a
// 4 s lease); one that came back in time says nothing.
func TestLateRestartIsRecorded(t *testing.T) {
	for _, tc := range []struct {
		took, lease time.Duration
		missed      bool
	}{
		{150 * time.Millisecond, 100 * time.Millisecond, true},
		{10 * time.Millisecond, time.Second, false},
	} {
		k := lateKind{took: tc.took}
		Register(k)
		env := &redisLeaseEnv{}
		env.lease.Store(int64(tc.lease))
		r := newStallRun(t, env, Spec{Kind: k.Name(), Point: "p"})
		if err := r.n.Point(context.Background(), 1, "p"); err != nil {
			t.Fatal(err)
		}
		r.n.HealAll()
		s := r.spans()
		delete(kinds, k.Name())
		if len(s) != 1 {
			t.Fatalf("spans %+v, want one", s)
		}
		if got := strings.Contains(s[0].Missed, "the server came back after the lock it was to forget could have expired"); got != tc.missed {
			t.Errorf("took %v under a %v lease: missed %q, want it said: %v", tc.took, tc.lease, s[0].Missed, tc.missed)
		}
	}
}
