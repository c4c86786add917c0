package runner_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/redis/go-redis/v9"
)

// twoCommandLock is seed 002's SETNX then PEXPIRE as a user writes it: two commands, no named
// point marked, so only the wire can reach the moment between them.
type twoCommandLock struct {
	rdb  *redis.Client
	name string
	me   string
	ttl  time.Duration
}

func (l *twoCommandLock) Acquire(ctx context.Context) (algorithms.Lease, error) {
	for {
		ok, err := l.rdb.SetNX(ctx, l.name, l.me, 0).Result()
		if err != nil {
			return algorithms.Lease{}, err
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return algorithms.Lease{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := l.rdb.PExpire(ctx, l.name, l.ttl).Err(); err != nil {
		return algorithms.Lease{}, &algorithms.UnknownError{Op: "PEXPIRE", Err: err}
	}
	return algorithms.Lease{Validity: l.ttl, TTL: l.ttl}, nil
}

var release = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

func (l *twoCommandLock) Release(ctx context.Context, _ algorithms.Lease) error {
	n, err := release.Run(ctx, l.rdb, []string{l.name}, l.me).Int()
	if err == nil && n == 0 {
		return algorithms.ErrNotHeld
	}
	return err
}

func (l *twoCommandLock) Close() error { return l.rdb.Close() }

var registerTwoCommand sync.Once

// TestClientCrashBetweenTwoCommands: the catalogue's client-crash reaches a lock that marks no
// point — SETNX, then PEXPIRE — by its wire crash: the first client whose SETNX succeeds dies as
// the reply reaches it, its PEXPIRE is never sent, and the key stays for good: stuck. The dead
// client runs no further step (its acquire stays open in the history, as a dead process leaves
// it). Before, the crash came only at cs:acquired, after both commands, and the lock was safe.
func TestClientCrashBetweenTwoCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real servers")
	}
	registerTwoCommand.Do(func() {
		algorithms.Register(algorithms.Info{Name: "test-setnx-pexpire", Topologies: []string{cluster.RedisSingle},
			New: func(cfg algorithms.Config) (algorithms.Locker, error) {
				rdb := redis.NewClient(&redis.Options{Addr: cfg.Addrs[0], Dialer: cfg.Dial, MaxRetries: -1,
					ReadTimeout: cfg.OpTimeout, WriteTimeout: cfg.OpTimeout})
				return &twoCommandLock{rdb: rdb, name: cfg.Name, me: fmt.Sprintf("client-%d", cfg.Client), ttl: cfg.TTL}, nil
			}})
	})
	s, err := scenarios.Lookup("client-crash")
	if err != nil {
		t.Fatal(err)
	}
	cell, err := s.Cell("test-setnx-pexpire")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := t.TempDir()
	rc, _, err := runner.RunCell(ctx, cell, runner.Options{Out: out, Seed: 1}, 0)
	if errors.Is(err, cluster.ErrMissingBinary) {
		testenv.MissingServer(t, err)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r := rc.Result
	if r.Verdict != checker.Stuck {
		t.Fatalf("verdict %s (%s), want stuck: the key set by SETNX never got its expiry", r.Verdict, r.DecidedBy)
	}
	h, err := history.ReadFile(filepath.Join(runner.Dir(out, cell, 0), "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	run := h.Run()
	var crashed []int
	for _, f := range run.Faults {
		if f.Name == "client-crash" && strings.Contains(f.Detail, "crashed the client as the reply") {
			crashed = append(crashed, f.TargetClients...)
			if f.End != history.Never {
				t.Errorf("the wire crash ended at %d: a crash never ends", f.End)
			}
		}
	}
	if len(crashed) != 1 {
		t.Fatalf("wire crashes of clients %v, want one (faults %+v)", crashed, run.Faults)
	}
	for _, o := range run.Ops {
		if o.Client == crashed[0] && o.Op == history.OpAcquire && o.Done != history.Never {
			t.Errorf("the crashed client %d's acquire (op %d) completed at %d: a dead client records nothing", o.Client, o.ID, o.Done)
		}
	}
}
