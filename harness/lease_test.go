package harness_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// longLease is a correct lock (a mutex in the test's process) that reports a 1 s lease, whatever
// the run's TTL: a library whose lease is its own.
type longLease struct{ held chan struct{} }

func (l *longLease) Acquire(ctx context.Context) (algorithms.Lease, error) {
	select {
	case l.held <- struct{}{}:
		return algorithms.Lease{TTL: time.Second}, nil
	case <-ctx.Done():
		return algorithms.Lease{}, ctx.Err()
	}
}

func (l *longLease) Release(context.Context, algorithms.Lease) error {
	select {
	case <-l.held:
	default:
	}
	return nil
}

var registerLongLease sync.Once

// TestFaultsSizedFromTheReportedLease: under a run TTL of 500 ms, a lock that reports a 1 s lease
// meets a stall of lease+400ms of 1.4 s, not 900 ms, and the stall's start line records the 1 s
// lease it must outlast.
func TestFaultsSizedFromTheReportedLease(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	held := make(chan struct{}, 1)
	registerLongLease.Do(func() {
		algorithms.Register(algorithms.Info{Name: "test-long-lease", Topologies: []string{cluster.RedisSingle},
			New: func(algorithms.Config) (algorithms.Locker, error) { return &longLease{held: held}, nil }})
	})
	dir := t.TempDir()
	res, err := harness.Run(context.Background(), harness.Config{Algorithm: "test-long-lease", Scenario: "lease",
		Dir: dir, Duration: 2500 * time.Millisecond, Workload: harness.Workload{Clients: 2, TTL: 500 * time.Millisecond},
		Faults: []faults.Spec{{Kind: "client-stall", Point: "cs:acquired", For: faults.Leases(1, 400*time.Millisecond)}}})
	if errors.Is(err, cluster.ErrMissingBinary) {
		testenv.MissingServer(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.ReadFile(res.HistoryPath)
	if err != nil {
		t.Fatal(err)
	}
	fs := h.Run().Faults
	if len(fs) != 1 {
		t.Fatalf("faults %+v, want one stall", fs)
	}
	f := fs[0]
	if lasted := time.Duration(f.End - f.Start); lasted < 1400*time.Millisecond || lasted > 2*time.Second {
		t.Errorf("the stall lasted %v, want lease+400ms = 1.4s (the reported 1 s lease, not the run's 500 ms TTL)", lasted)
	}
	if f.OutlastNs != int64(time.Second) || f.Missed != "" {
		t.Errorf("the stall must outlast %v and missed %q; want 1s and nothing", time.Duration(f.OutlastNs), f.Missed)
	}
}
