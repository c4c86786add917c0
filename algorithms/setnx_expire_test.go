package algorithms_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
	"github.com/redis/go-redis/v9"
)

// TestSetnxExpireCrashBetweenCommands: a client that dies between SETNX and EXPIRE (seed 002,
// problem 1) leaves the key with no TTL on the server, so no other client can ever take the lock.
func TestSetnxExpireCrashBetweenCommands(t *testing.T) {
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 2, Proxies: true})
	crash := errors.New("crashed")
	a := newLocker(t, c, "setnx-expire", 1, "crash", opts{ttl: 300 * time.Millisecond,
		point: func(_ context.Context, name string) error {
			if name == "acquire:after-setnx" {
				return crash
			}
			return nil
		}})
	if _, err := a.Acquire(context.Background()); !errors.Is(err, crash) {
		t.Fatalf("Acquire = %v, want the crash at acquire:after-setnx", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: c.Nodes()[0].Addr})
	defer rdb.Close()
	if pttl, err := rdb.PTTL(context.Background(), "crash").Result(); err != nil || pttl != -1 {
		t.Fatalf("PTTL of the lock key = %v, %v; want -1 (the key exists and never expires)", pttl, err)
	}
	b := newLocker(t, c, "setnx-expire", 2, "crash", opts{ttl: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second) // > 3×TTL
	defer cancel()
	if l, err := b.Acquire(ctx); err == nil {
		t.Fatalf("another client acquired the orphaned lock: %+v", l)
	}
}
