package locktest_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/locktest"
	"github.com/redis/go-redis/v9"
)

// redisLock is a user's Redis lock as people write it: SET key value NX PX ttl to acquire.
// With ownerCheck it releases by the Lua compare-and-delete of the Redis docs; without, by a plain
// DEL, which removes whatever lock is there — the bug of seed 003's second table.
type redisLock struct {
	rdb        *redis.Client
	key        string
	ttl        time.Duration
	ownerCheck bool
}

func newRedisLock(cfg algorithms.Config, ownerCheck bool) *redisLock {
	return &redisLock{
		// Dial is this client's proxy: a fault on its links must reach this connection.
		rdb:        redis.NewClient(&redis.Options{Addr: cfg.Addrs[0], Dialer: cfg.Dial, MaxRetries: -1}),
		key:        cfg.Name,
		ttl:        cfg.TTL,
		ownerCheck: ownerCheck,
	}
}

func (l *redisLock) Acquire(ctx context.Context) (algorithms.Lease, error) {
	token := rand.Text()
	for {
		ok, err := l.rdb.SetNX(ctx, l.key, token, l.ttl).Result()
		if err != nil {
			return algorithms.Lease{}, err
		}
		if ok {
			return algorithms.Lease{Validity: l.ttl, TTL: l.ttl, Data: token}, nil
		}
		select {
		case <-ctx.Done():
			return algorithms.Lease{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

var compareAndDelete = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("DEL", KEYS[1])
end
return 0`)

func (l *redisLock) Release(ctx context.Context, lease algorithms.Lease) error {
	var n int64
	var err error
	if l.ownerCheck {
		n, err = compareAndDelete.Run(ctx, l.rdb, []string{l.key}, lease.Data).Int64()
	} else {
		n, err = l.rdb.Del(ctx, l.key).Result()
	}
	if err == nil && n == 0 {
		return algorithms.ErrNotHeld
	}
	return err
}

func (l *redisLock) Close() error { return l.rdb.Close() }

func correctLock(cfg algorithms.Config) (algorithms.Locker, error) {
	return newRedisLock(cfg, true), nil
}

func buggyLock(cfg algorithms.Config) (algorithms.Locker, error) {
	return newRedisLock(cfg, false), nil
}

// TestMutantCaughtThroughLocktest: locktest pointed at a mutant fails the scenario that must catch
// it, and passes its real algorithm there.
func TestMutantCaughtThroughLocktest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real redis-server")
	}
	c := capture(t, func(tb testing.TB) {
		locktest.Run(tb, locktest.Algorithm("token-plain-del"), locktest.WithScenarios("slow-release"), locktest.WithOut(t.TempDir()))
	})
	if c.skipped != "" {
		t.Skip(c.skipped)
	}
	if !c.failed || len(c.errors) != 1 || !strings.Contains(c.errors[0], "verdict unsafe (service class") ||
		!strings.Contains(c.errors[0], "\tcause: ") {
		t.Fatalf("token-plain-del not caught with its cause (failed %v): %q", c.failed, c.errors)
	}
	locktest.Run(t, locktest.Algorithm("token"), locktest.WithScenarios("slow-release"))
}

// TestCorrectLockPasses: SET NX PX with a token and compare-and-delete is safe in baseline and
// slow-release, where the late release finds another client's token and deletes nothing.
func TestCorrectLockPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real redis-server")
	}
	locktest.Run(t, correctLock, locktest.WithScenarios("baseline", "slow-release"))
}

// TestBuggyLockCaught: the same lock released by a plain DEL is caught in slow-release — its late
// DEL removes the next holder's key — and the failure says so, with the report's path.
func TestBuggyLockCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real redis-server")
	}
	out := t.TempDir()
	c := capture(t, func(tb testing.TB) {
		locktest.Run(tb, buggyLock, locktest.WithScenarios("slow-release"), locktest.WithOut(out))
	})
	if c.skipped != "" {
		t.Skip(c.skipped)
	}
	if !c.failed || len(c.errors) != 1 {
		t.Fatalf("the buggy lock was not reported (failed %v, errors %q, logs %q)", c.failed, c.errors, c.logs)
	}
	msg := c.errors[0]
	t.Logf("locktest said:\n%s", msg)
	for _, want := range []string{"slow-release: verdict unsafe", "expected safe", "TTD ", "first violation", "report: "} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	report := regexp.MustCompile(`report: (\S+)`).FindStringSubmatch(msg)
	if report == nil {
		t.Fatal("no report path")
	}
	if _, err := os.Stat(report[1]); err != nil {
		t.Errorf("report: %v", err)
	}
	var res struct {
		Verdict string  `json:"verdict"`
		Class   *string `json:"violation_class"`
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(report[1]), "result.json"))
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil || res.Verdict != "unsafe" || res.Class == nil {
		t.Errorf("result.json: verdict %q class %v err %v, want unsafe with a class", res.Verdict, res.Class, err)
	}
}

// captured is a testing.TB that records failures and skips instead of reporting them, so a test
// can check what locktest.Run reports about a broken lock (as x/net/nettest's own tests do).
type captured struct {
	testing.TB
	mu             sync.Mutex
	failed         bool
	errors, logs   []string
	skipped, fatal string
}

// capture runs f with a captured TB in its own goroutine, so FailNow and SkipNow end only f.
func capture(t *testing.T, f func(testing.TB)) *captured {
	c := &captured{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(c)
	}()
	<-done
	return c
}

func (c *captured) Helper() {}

func (c *captured) Error(args ...any) { c.Errorf("%s", fmt.Sprint(args...)) }

func (c *captured) Errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed = true
	c.errors = append(c.errors, fmt.Sprintf(format, args...))
}

func (c *captured) Fail() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed = true
}

func (c *captured) Failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

func (c *captured) FailNow() {
	c.Fail()
	runtime.Goexit()
}

func (c *captured) Fatal(args ...any) { c.Fatalf("%s", fmt.Sprint(args...)) }

func (c *captured) Fatalf(format string, args ...any) {
	c.mu.Lock()
	c.fatal = fmt.Sprintf(format, args...)
	c.mu.Unlock()
	c.FailNow()
}

func (c *captured) Log(args ...any) { c.Logf("%s", fmt.Sprint(args...)) }

func (c *captured) Logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs = append(c.logs, fmt.Sprintf(format, args...))
}

func (c *captured) Skip(args ...any) { c.Skipf("%s", fmt.Sprint(args...)) }

func (c *captured) Skipf(format string, args ...any) {
	c.mu.Lock()
	c.skipped = fmt.Sprintf(format, args...)
	c.mu.Unlock()
	runtime.Goexit()
}

func (c *captured) SkipNow() { c.Skipf("skipped") }

func (c *captured) Skipped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.skipped != ""
}
