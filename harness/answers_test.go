package harness_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// hangingLock is a correct lock (a mutex in the test's process) whose client 2 stops answering at
// its second Acquire: it never returns, whatever its context says — a library that hung, a
// process client whose threads outlived its protocol loop.
type hangingLock struct {
	client int
	held   chan struct{}
	calls  int
	hang   chan struct{}
}

func (l *hangingLock) Acquire(ctx context.Context) (algorithms.Lease, error) {
	l.calls++
	if l.client == 2 && l.calls == 2 {
		<-l.hang
		return algorithms.Lease{}, errors.New("hung")
	}
	select {
	case l.held <- struct{}{}:
		return algorithms.Lease{}, nil
	case <-ctx.Done():
		return algorithms.Lease{}, ctx.Err()
	}
}

func (l *hangingLock) Release(context.Context, algorithms.Lease) error {
	select {
	case <-l.held:
	default:
	}
	return nil
}

var registerHanging sync.Once

// TestClientThatStopsAnsweringIsNeverSafe: a run whose Decide says "safe" does not
// stop while a client's call is overdue, and the client still in its call after the run names it:
// an abort line, the run's error, and an unknown verdict — never safe.
func TestClientThatStopsAnsweringIsNeverSafe(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	held, hang := make(chan struct{}, 1), make(chan struct{})
	t.Cleanup(func() { close(hang) })
	registerHanging.Do(func() {
		algorithms.Register(algorithms.Info{Name: "test-hanging", Topologies: []string{cluster.RedisSingle},
			New: func(cfg algorithms.Config) (algorithms.Locker, error) {
				return &hangingLock{client: cfg.Client, held: held, hang: hang}, nil
			}})
	})
	// "Safe" from 1.5 s on: by then client 2's second acquire, called in the first 100 ms with
	// a 1 s timeout, is overdue.
	start := time.Now()
	decide := func(*history.History) (string, string) {
		if time.Since(start) < 1500*time.Millisecond {
			return "", ""
		}
		return "safe", "decided by the test"
	}
	dir := t.TempDir()
	res, err := harness.Run(context.Background(), harness.Config{Algorithm: "test-hanging", Scenario: "hang",
		Dir: dir, Duration: 2 * time.Second, Workload: harness.Workload{Clients: 3, TTL: 500 * time.Millisecond}, Decide: decide})
	if errors.Is(err, cluster.ErrMissingBinary) {
		testenv.MissingServer(t, err)
	}
	if err == nil || !strings.Contains(err.Error(), "client 2 stopped answering: its acquire") {
		t.Fatalf("err = %v, want client 2 named as not answering", err)
	}
	if res.Stopped != "" {
		t.Errorf("the run stopped decided (%s) while client 2's acquire was overdue", res.Stopped)
	}
	h, rerr := history.ReadFile(res.HistoryPath)
	if rerr != nil {
		t.Fatal(rerr)
	}
	out := checker.CheckHistory(h, checker.Options{}).Result
	if out.Verdict != checker.Unknown || !strings.Contains(out.DecidedBy, "client 2 stopped answering") {
		t.Errorf("verdict %s (%s), want unknown naming client 2", out.Verdict, out.DecidedBy)
	}
}
