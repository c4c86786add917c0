package locktest_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/locktest"
	"github.com/redis/go-redis/v9"
)

// tokenLock is a small Redis lock, the way its users write one: SET key token NX PX ttl to
// acquire, and a Lua compare-and-delete to release, so a late release never deletes another
// client's lock.
type tokenLock struct {
	rdb *redis.Client
	key string
	ttl time.Duration
}

// Acquire retries SET NX PX until it wins or ctx ends. The Lease says what the server enforces
// (TTL) and how long the holder may trust it (Validity, counted from this call).
func (l *tokenLock) Acquire(ctx context.Context) (algorithms.Lease, error) {
	token := rand.Text()
	for {
		ok, err := l.rdb.SetNX(ctx, l.key, token, l.ttl).Result()
		if err != nil {
			return algorithms.Lease{}, err
		}
		if ok {
			return algorithms.Lease{TTL: l.ttl, Validity: l.ttl, Data: token}, nil
		}
		select {
		case <-ctx.Done():
			return algorithms.Lease{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

var release = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("DEL", KEYS[1])
end
return 0`)

// Release deletes the key only if it still holds this lease's token, and says ErrNotHeld when it
// did not: the lease had expired and another client may hold the lock.
func (l *tokenLock) Release(ctx context.Context, lease algorithms.Lease) error {
	n, err := release.Run(ctx, l.rdb, []string{l.key}, lease.Data).Int64()
	if err == nil && n == 0 {
		return algorithms.ErrNotHeld
	}
	return err
}

// Close is called after each run (algorithms.Closer).
func (l *tokenLock) Close() error { return l.rdb.Close() }

// Test a lock of your own with one call: a factory builds one Locker per client from the
// addresses, dialer and TTL lockchaos gives that client, and Run runs the chosen scenarios
// against a real redis-server, one subtest each. Put the body of TestMyLock in a _test.go file
// of your own; it needs redis-server installed (it skips without it), so this example is
// compiled by go test but not run.
func ExampleRun() {
	TestMyLock := func(t *testing.T) {
		locktest.Run(t, func(cfg algorithms.Config) (algorithms.Locker, error) {
			return &tokenLock{
				// cfg.Addrs[0] is this client's own proxy to the server, and cfg.Dial must make
				// every connection, so that a fault can cut this client off.
				rdb: redis.NewClient(&redis.Options{Addr: cfg.Addrs[0], Dialer: cfg.Dial, MaxRetries: -1}),
				key: cfg.Name,
				ttl: cfg.TTL,
			}, nil
		},
			// Two scenarios, both expected safe: no fault, and a release delayed until another
			// client holds the lock. (WithExpect says where a lock is unsafe by design.)
			locktest.WithScenarios("baseline", "slow-release"),
		)
	}
	_ = TestMyLock
}
