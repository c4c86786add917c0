package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// clockJump emulates a forward jump of a Redis server's wall clock by J, exactly as far as key
// expiry is concerned: one atomic script shifts every key's remaining TTL down by J, and deletes the
// keys whose PTTL ≤ J (they would have expired at once). A real jump cannot be made here: libfaketime
// hangs Debian's redis-server (its jemalloc clashes with the preload), and clock_settime is not
// allowed in containers. Keys without a TTL are untouched, as they are by a real jump — which is
// why the getset lock, whose expiry lives in the value and on the clients' clocks, is immune.
type clockJump struct{}

func init() { register(clockJump{}) }

// jumpScript returns {shifted, expired}. SCAN inside a script is allowed since Redis 5 (effects
// replication).
var jumpScript = redis.NewScript(`
local jump = tonumber(ARGV[1])
local cursor = "0"
local shifted, expired = 0, 0
repeat
  local r = redis.call("SCAN", cursor, "COUNT", 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    local t = redis.call("PTTL", k)
    if t > 0 then
      if t <= jump then
        redis.call("DEL", k)
        expired = expired + 1
      else
        redis.call("PEXPIRE", k, t - jump)
        shifted = shifted + 1
      end
    end
  end
until cursor == "0"
return {shifted, expired}
`)

func (clockJump) Name() string { return "clock-jump" }

func (clockJump) Describe(t Target) string { return fmt.Sprintf("server clock jumps +%s", t.Amount) }

func (clockJump) validate(s Spec) error {
	if s.Amount <= 0 {
		return errors.New("fault clock-jump: amount must be > 0 (the jump, e.g. amount: 2s, at least the TTL)")
	}
	if s.Nodes == "" {
		return errors.New("fault clock-jump: nodes must be set (e.g. nodes: master)")
	}
	return nil
}

// Inject jumps every target node's clock. A jump is instant and is not undone.
func (clockJump) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	var errs []error
	for _, name := range t.Nodes {
		_, _, err := JumpClock(ctx, nodeAddr(env, name), t.Amount.D())
		if err != nil {
			errs = append(errs, fmt.Errorf("clock-jump %s: %w", name, err))
		}
	}
	return nil, errors.Join(errs...)
}

// JumpClock applies an emulated clock jump of j to the Redis server at addr and returns how many
// keys had their TTL shifted and how many expired.
func JumpClock(ctx context.Context, addr string, j time.Duration) (shifted, expired int64, err error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	defer c.Close()
	v, err := jumpScript.Run(ctx, c, nil, j.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	return v[0], v[1], nil
}

func nodeAddr(env Env, name string) string {
	for _, n := range env.Cluster().Nodes() {
		if n.Name == name {
			return n.Addr
		}
	}
	return ""
}
