package faults

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// slowKind is a test-only kind whose Inject takes a while, so HealAll can run in the middle of it.
type slowKind struct {
	entered chan struct{}
	healed  *atomic.Int32
}

func (slowKind) Available(cluster.Topology) string { return "" }
func (slowKind) Name() string                      { return "test-slow-inject" }

func (k slowKind) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	close(k.entered)
	time.Sleep(100 * time.Millisecond)
	return func(context.Context) error { k.healed.Add(1); return nil }, nil
}

type noNodes struct{ cluster.Cluster }

func (noNodes) Nodes() []cluster.Node { return nil }

type bareEnv struct{}

func (bareEnv) Cluster() cluster.Cluster             { return noNodes{} }
func (bareEnv) Clients() int                         { return 1 }
func (bareEnv) TTL() time.Duration                   { return time.Second }
func (bareEnv) Lease() time.Duration                 { return time.Second }
func (bareEnv) Renews() time.Duration                { return 0 }
func (bareEnv) SetClock(int, time.Duration, float64) {}

// TestHealAllDuringInject fires a fault whose injection is still running when HealAll takes its
// list (a timed fault planned at the end of the fault phase, or a client reaching a point just
// then): the fault must be healed, and its end recorded, as soon as the injection finishes — not
// left in force for the rest of the run.
func TestHealAllDuringInject(t *testing.T) {
	for _, dur := range []time.Duration{0, time.Hour} {
		k := slowKind{entered: make(chan struct{}), healed: new(atomic.Int32)}
		Register(k)
		var mu sync.Mutex
		var events []history.Event
		n, err := New(bareEnv{}, []Spec{{Kind: k.Name(), Point: "p", For: Fixed(dur)}}, Options{
			Record: func(e history.Event) { mu.Lock(); events = append(events, e); mu.Unlock() },
		})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- n.Point(context.Background(), 1, "p") }()
		<-k.entered
		n.HealAll()
		// The phase ended during the injection: the fault is under way, not unfired (a ZooKeeper
		// restart outlasting the phase was recorded "unfired" and then, seconds later, started).
		if u := n.Unfired(); len(u) != 0 {
			t.Errorf("for %v: Unfired during the injection = %+v, want none", dur, u)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := k.healed.Load(); got != 1 {
			t.Errorf("for %v: healed %d times, want once (HealAll ran during Inject)", dur, got)
		}
		mu.Lock()
		spans := history.Faults(events)
		mu.Unlock()
		if len(spans) != 1 || spans[0].End == history.Never {
			t.Errorf("for %v: spans %+v, want one that ended", dur, spans)
		}
		delete(kinds, k.Name())
	}
}
