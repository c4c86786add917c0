package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"

	"github.com/redis/go-redis/v9"
)

// clockJump emulates a forward jump of a Redis server's wall clock by J, exactly as far as key
// expiry is concerned: one atomic script shifts every key's remaining TTL down by J, and deletes the
// keys whose PTTL ≤ J (they would have expired at once). A real jump cannot be made here: libfaketime
// hangs Debian's redis-server (its jemalloc clashes with the preload), and clock_settime is not
// allowed in containers. Keys without a TTL are untouched, as they are by a real jump — which is
// why the getset lock, whose expiry lives in the value and on the clients' clocks, is immune.
type clockJump struct{}

func init() { Register(clockJump{}) }

// jumpScript returns {shifted, expired}; ARGV[2] is the glob of the keys it may touch. SCAN inside
// a script is allowed since Redis 5 (effects replication).
var jumpScript = redis.NewScript(`
local jump = tonumber(ARGV[1])
local cursor = "0"
local shifted, expired = 0, 0
repeat
  local r = redis.call("SCAN", cursor, "MATCH", ARGV[2], "COUNT", 1000)
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

// Available: the jump shifts key TTLs, so it needs a topology whose lock keys expire on a
// server clock (Redis); a session or a row timed by now() has no key to shift.
func (clockJump) Available(t cluster.Topology) string { return t.Lacks(cluster.TraitKeyExpiry) }

func (clockJump) Name() string { return "clock-jump" }

func (clockJump) Describe(t Target) string { return fmt.Sprintf("server clock jumps +%s", t.Amount) }

func (clockJump) validate(s Spec) error {
	if !s.Amount.positive() {
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
		_, _, err := JumpClockMatch(ctx, nodeAddr(env, name), t.Amount.D(), keyPattern(env))
		if err != nil {
			errs = append(errs, fmt.Errorf("clock-jump %s: %w", name, err))
		}
	}
	return nil, errors.Join(errs...)
}

// JumpClock applies an emulated clock jump of j to the Redis server at addr and returns how many
// keys had their TTL shifted and how many expired.
func JumpClock(ctx context.Context, addr string, j time.Duration) (shifted, expired int64, err error) {
	return JumpClockMatch(ctx, addr, j, "*")
}

// JumpClockMatch is JumpClock limited to the keys matching the glob pattern: on a server someone
// else uses, the run's own keys.
func JumpClockMatch(ctx context.Context, addr string, j time.Duration, pattern string) (shifted, expired int64, err error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	defer c.Close()
	v, err := jumpScript.Run(ctx, c, nil, j.Milliseconds(), pattern).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	return v[0], v[1], nil
}

// keyPattern is the glob of the keys a run may touch: the Env's KeyPattern when it has one (the
// harness gives the run's prefix on the external backend), else every key.
func keyPattern(env Env) string {
	if k, ok := env.(interface{ KeyPattern() string }); ok && k.KeyPattern() != "" {
		return k.KeyPattern()
	}
	return "*"
}

func nodeAddr(env Env, name string) string {
	for _, n := range env.Cluster().Nodes() {
		if n.Name == name {
			return n.Addr
		}
	}
	return ""
}

// A server clock jump (emulated on the keys' TTLs) acts on the server's state.
func (clockJump) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnServers, false) }
