package algorithms

// Point-free token locks on one Redis, written as a user writes them from the go-redis README
// (github.com/redis/go-redis) and the lock pattern of the Redis SET documentation: the client is
// built with redis.NewClient (redis.NewFailoverClient through Sentinel), the key is taken with
// SetNX in a retry loop and given back with a Lua compare-and-delete run by Eval. Nothing here
// uses this package's own Redis helpers and nothing calls Config.Point: faults reach these locks
// only through their connections (the proxies), as they reach a user's lock under locktest
// (docs/design.md#mutants: teeth for a lock that marks no named points).
//
//	user-token             SET key token PX ttl NX until it takes; Validity = TTL − drift from
//	                       the call; release: EVAL compare-and-delete
//	user-token-get-del     release: GET, compare in the client, then DEL (two commands)
//	user-token-no-validity Validity 0: the holder trusts the lease until it releases
//	user-token-validity-from-reply
//	                       the full TTL counted from the SET's reply (Validity = TTL + the time
//	                       the acquire took)
//	user-token-renew       a watchdog renews every TTL/3 with a compare-and-PEXPIRE; the first
//	                       failed or refused renewal ends the lease (Valid false for good)
//	user-token-blind-renew the watchdog renews with a plain SET key token PX ttl and never gives up
//	user-token-two-command-expiry
//	                       SETNX key token, then PEXPIRE key ttl as a second command
//	user-token-error-grant a SET NX that failed (an error, a refused dial, a timeout) is taken for a grant
//
// On the wire (go-redis v9 defaults, which a user keeps): RESP3 (HELLO 3 on every new
// connection), SetNX is sent as `set key token px <ms> nx` (`ex <s>` for a TTL of whole
// seconds), the release as `EVAL <script> 1 key token`.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// userTokenBug is the one thing a user-token mutant gets wrong.
type userTokenBug int

const (
	userTokenCorrect           userTokenBug = iota
	userTokenGetDel                         // release by GET, compare, DEL
	userTokenNoValidity                     // Validity 0
	userTokenValidityFromReply              // the TTL counted from the reply
	userTokenTwoCommandExpiry               // SETNX, then PEXPIRE as a second command
	userTokenErrorGrant                     // a SET NX that failed taken for a grant
)

// userTokenRelease is the compare-and-delete script of the Redis SET documentation.
const userTokenRelease = `if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end`

// userTokenRenew extends the key only while it holds our token.
const userTokenRenew = `if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("pexpire", KEYS[1], ARGV[2])
else
    return 0
end`

// userTokenLock is the user's SET NX PX lock (and, with bug set, its mistakes).
type userTokenLock struct {
	cfg  Config
	name string
	rdb  *redis.Client
	bug  userTokenBug
	mu   sync.Mutex // guards cfg.Rand
}

// userTokenConfig fills what Config may leave zero, as a user's constructor would.
func userTokenConfig(cfg Config) Config {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Name == "" {
		cfg.Name = "lock"
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = max(cfg.TTL/10, 50*time.Millisecond)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(uint64(cfg.Client), 0x75736572))
	}
	return cfg
}

func newUserToken(name string, bug userTokenBug) func(Config) (Locker, error) {
	return func(cfg Config) (Locker, error) {
		l, err := newUserTokenLock(cfg, name, bug)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

func newUserTokenLock(cfg Config, name string, bug userTokenBug) (*userTokenLock, error) {
	cfg = userTokenConfig(cfg)
	if cfg.TTL <= 0 {
		return nil, fmt.Errorf("%s: needs a TTL", name)
	}
	var rdb *redis.Client
	switch {
	case cfg.Sentinel != nil:
		rdb = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:    cfg.Sentinel.MasterName,
			SentinelAddrs: cfg.Sentinel.Addrs,
			Dialer:        cfg.Dial,
			// A retried SET NX would find our own key and say "taken"; a retried release could
			// say "not held" after it deleted: never retry a command.
			MaxRetries:            -1,
			DialTimeout:           cfg.OpTimeout,
			ReadTimeout:           cfg.OpTimeout,
			WriteTimeout:          cfg.OpTimeout,
			ContextTimeoutEnabled: true,
		})
	case len(cfg.Addrs) == 1:
		rdb = redis.NewClient(&redis.Options{
			Addr:                  cfg.Addrs[0],
			Dialer:                cfg.Dial,
			MaxRetries:            -1,
			DialTimeout:           cfg.OpTimeout,
			ReadTimeout:           cfg.OpTimeout,
			WriteTimeout:          cfg.OpTimeout,
			ContextTimeoutEnabled: true,
		})
	default:
		return nil, fmt.Errorf("%s: want one Redis address or Sentinel, got %d addresses", name, len(cfg.Addrs))
	}
	return &userTokenLock{cfg: cfg, name: name, rdb: rdb, bug: bug}, nil
}

// Close closes the client.
func (l *userTokenLock) Close() error { return l.rdb.Close() }

// request bounds one command by OpTimeout. It is not cut off when ctx ends: a command cut off in
// flight has an unknown outcome, so the caller's deadline is looked at between commands.
func (l *userTokenLock) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), l.cfg.OpTimeout)
}

func (l *userTokenLock) token() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d-%016x%016x", l.cfg.Client, l.cfg.Rand.Uint64(), l.cfg.Rand.Uint64())
}

// pause is the jittered wait between two SET NX: 5–20 ms.
func (l *userTokenLock) pause() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return 5*time.Millisecond + time.Duration(l.cfg.Rand.Int64N(int64(15*time.Millisecond)))
}

// drift is the margin for the clocks' drift: TTL/100 + 2 ms, as on the Redis distlock page.
func (l *userTokenLock) drift() time.Duration { return l.cfg.TTL/100 + 2*time.Millisecond }

// userTokenErr sorts a failed command that may have changed the key: an error reply from the
// server, a dial that failed or a closed client are definite (nothing took effect); anything else
// (a timeout, a reset, EOF after the command left) may have reached the server.
func userTokenErr(op string, err error) error {
	var rerr redis.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &rerr),
		errors.As(err, &oe) && oe.Op == "dial",
		errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout):
		return fmt.Errorf("%s: %w", op, err)
	}
	return &UnknownError{Op: op, Err: err}
}

// take runs SET key token NX PX ttl until it sets the key or ctx ends, and returns when the SET
// that set it was sent, by the client's clock.
func (l *userTokenLock) take(ctx context.Context, token string) (time.Time, error) {
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, fmt.Errorf("%s acquire: %w", l.name, err)
		}
		sent := l.cfg.Clock.Now()
		rctx, cancel := l.request(ctx)
		ttl := l.cfg.TTL
		if l.bug == userTokenTwoCommandExpiry {
			ttl = 0 // SETNX alone; the expiry follows as a command of its own
		}
		ok, err := l.rdb.SetNX(rctx, l.cfg.Name, token, ttl).Result()
		cancel()
		if err != nil && l.bug == userTokenErrorGrant {
			return sent, nil // only "taken" (a nil reply) is looked at
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("%s acquire: %w", l.name, userTokenErr("SET NX PX", err))
		}
		if ok && l.bug == userTokenTwoCommandExpiry {
			rctx, cancel := l.request(ctx)
			err := l.rdb.PExpire(rctx, l.cfg.Name, l.cfg.TTL).Err()
			cancel()
			if err != nil {
				return time.Time{}, fmt.Errorf("%s acquire: %w", l.name, userTokenErr("PEXPIRE", err))
			}
		}
		if ok {
			return sent, nil
		}
		t := time.NewTimer(l.pause())
		select {
		case <-ctx.Done():
			t.Stop()
			return time.Time{}, fmt.Errorf("%s acquire: %w", l.name, ctx.Err())
		case <-t.C:
		}
	}
}

// Acquire takes the key with a fresh token.
func (l *userTokenLock) Acquire(ctx context.Context) (Lease, error) {
	called := l.cfg.Clock.Now()
	token := l.token()
	if _, err := l.take(ctx, token); err != nil {
		return Lease{}, err
	}
	switch l.bug {
	case userTokenNoValidity:
		return Lease{TTL: l.cfg.TTL, Data: token}, nil
	case userTokenValidityFromReply:
		// A full TTL from now; Lease.Validity counts from the call.
		return Lease{Validity: l.cfg.TTL + l.cfg.Clock.Now().Sub(called), TTL: l.cfg.TTL, Data: token}, nil
	}
	// The key was set after the call, so it lives at least until call + TTL: what is left now is
	// TTL − (now − call) − drift, i.e. TTL − drift counted from the call.
	return Lease{Validity: l.cfg.TTL - l.drift(), TTL: l.cfg.TTL, Data: token}, nil
}

// Release deletes the key if it still holds the lease's token; ErrNotHeld otherwise.
func (l *userTokenLock) Release(ctx context.Context, lease Lease) error {
	token, ok := lease.Data.(string)
	if !ok {
		return fmt.Errorf("%s release: lease has no token (Data %T)", l.name, lease.Data)
	}
	if l.bug == userTokenGetDel {
		return l.releaseGetDel(ctx, token)
	}
	return l.releaseScript(ctx, token)
}

func (l *userTokenLock) releaseScript(ctx context.Context, token string) error {
	rctx, cancel := l.request(ctx)
	defer cancel()
	n, err := l.rdb.Eval(rctx, userTokenRelease, []string{l.cfg.Name}, token).Int64()
	if err != nil {
		return fmt.Errorf("%s release: %w", l.name, userTokenErr("EVAL compare-and-delete", err))
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// releaseGetDel is the mutant's release: the key may change hands between its GET and its DEL.
func (l *userTokenLock) releaseGetDel(ctx context.Context, token string) error {
	rctx, cancel := l.request(ctx)
	v, err := l.rdb.Get(rctx, l.cfg.Name).Result()
	cancel()
	switch {
	case errors.Is(err, redis.Nil):
		return ErrNotHeld
	case err != nil:
		return fmt.Errorf("%s release: GET: %w", l.name, err) // a read: nothing changed
	case v != token:
		return ErrNotHeld
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s release: %w", l.name, err)
	}
	rctx, cancel = l.request(ctx)
	defer cancel()
	n, err := l.rdb.Del(rctx, l.cfg.Name).Result()
	if err != nil {
		return fmt.Errorf("%s release: %w", l.name, userTokenErr("DEL", err))
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// userRenewLock is user-token kept alive by a watchdog goroutine, as Redisson's lock watchdog
// does: Validity 0 (held until released), and Valid says whether the watchdog still holds.
type userRenewLock struct {
	*userTokenLock
	blind bool     // user-token-blind-renew
	dogs  sync.Map // token → *userWatchdog
}

type userWatchdog struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	lost bool      // a renewal failed or was refused: the lease is given up for good
	good time.Time // the lease is held until then, by the client's clock: last renewal sent + TTL − drift
}

func newUserRenew(name string, blind bool) func(Config) (Locker, error) {
	return func(cfg Config) (Locker, error) {
		l, err := newUserTokenLock(cfg, name, userTokenCorrect)
		if err != nil {
			return nil, err
		}
		return &userRenewLock{userTokenLock: l, blind: blind}, nil
	}
}

// Acquire takes the key and starts its watchdog.
func (l *userRenewLock) Acquire(ctx context.Context) (Lease, error) {
	token := l.token()
	// The key was set after the winning SET was sent: it lives at least TTL from then.
	sent, err := l.take(ctx, token)
	if err != nil {
		return Lease{}, err
	}
	d := &userWatchdog{stop: make(chan struct{}), done: make(chan struct{}), good: sent.Add(l.cfg.TTL - l.drift())}
	l.dogs.Store(token, d)
	go l.watch(token, d)
	return Lease{TTL: l.cfg.TTL, Data: token}, nil
}

// watch renews the lease every TTL/3 until stopped; the correct lock stops at the first renewal
// that fails or is refused, the blind one never does.
func (l *userRenewLock) watch(token string, d *userWatchdog) {
	defer close(d.done)
	t := time.NewTicker(max(l.cfg.TTL/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		sent := l.cfg.Clock.Now()
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.OpTimeout)
		if l.blind {
			_ = l.rdb.Set(ctx, l.cfg.Name, token, l.cfg.TTL).Err()
			cancel()
			continue
		}
		n, err := l.rdb.Eval(ctx, userTokenRenew, []string{l.cfg.Name}, token, l.cfg.TTL.Milliseconds()).Int64()
		cancel()
		d.mu.Lock()
		if err != nil || n != 1 {
			d.lost = true
			d.mu.Unlock()
			return
		}
		d.good = sent.Add(l.cfg.TTL - l.drift())
		d.mu.Unlock()
	}
}

// Valid reports whether the watchdog still holds the lease: no renewal failed, and the last one
// that succeeded was sent less than TTL − drift ago. The blind lock always says yes.
func (l *userRenewLock) Valid(lease Lease) bool {
	if l.blind {
		return true
	}
	token, _ := lease.Data.(string)
	v, ok := l.dogs.Load(token)
	if !ok {
		return false // released
	}
	d := v.(*userWatchdog)
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.lost && l.cfg.Clock.Now().Before(d.good)
}

// stopDog stops the watchdog of token (if any) and waits for it, so no renewal follows.
func (l *userRenewLock) stopDog(token string) {
	v, ok := l.dogs.LoadAndDelete(token)
	if !ok {
		return
	}
	d := v.(*userWatchdog)
	close(d.stop)
	<-d.done
}

// Release stops the watchdog (so no renewal follows), then runs the compare-and-delete.
func (l *userRenewLock) Release(ctx context.Context, lease Lease) error {
	token, ok := lease.Data.(string)
	if !ok {
		return fmt.Errorf("%s release: lease has no token (Data %T)", l.name, lease.Data)
	}
	l.stopDog(token)
	return l.releaseScript(ctx, token)
}

// Close stops every watchdog and closes the client.
func (l *userRenewLock) Close() error {
	l.dogs.Range(func(k, _ any) bool {
		l.stopDog(k.(string))
		return true
	})
	return l.userTokenLock.Close()
}

func init() {
	single := []string{topoRedisSingle, topoRedisSentinel}
	const src = "the go-redis README (github.com/redis/go-redis) and the lock pattern of the Redis SET documentation " +
		"(redis.io/docs/latest/commands/set)"
	Register(Info{
		Name: "user-token",
		Summary: "Point-free lock written as a user writes one with go-redis: SetNX with a random token in a jittered retry " +
			"loop, validity TTL − drift from the call, release by a Lua compare-and-delete (Eval). Calls no named point.",
		Source:     src,
		Topologies: single,
		New:        newUserToken("user-token", userTokenCorrect),
	})
	Register(Info{
		Name: "user-token-renew",
		Summary: "Point-free user-token kept alive by a watchdog goroutine: a Lua compare-and-PEXPIRE every TTL/3; the first " +
			"failed or refused renewal makes Valid false for good. Calls no named point.",
		Source:       src + "; Redisson's lock watchdog (renewExpiration)",
		Topologies:   single,
		RenewsPerTTL: 1.0 / 3,
		New:          newUserRenew("user-token-renew", false),
	})
	for _, m := range []Info{
		{
			Name: "user-token-get-del", Mutant: "user-token",
			Removed: "the atomic release: GET, compare in the client, then DEL (two commands), so a DEL sent after the key " +
				"expired deletes the next holder's key",
			New: newUserToken("user-token-get-del", userTokenGetDel),
		},
		{
			Name: "user-token-no-validity", Mutant: "user-token",
			Removed: "the validity: Validity 0, the holder trusts the lease until it releases (the key still has its TTL)",
			New:     newUserToken("user-token-no-validity", userTokenNoValidity),
		},
		{
			Name: "user-token-validity-from-reply", Mutant: "user-token",
			Removed: "validity counted from the call: the holder trusts a full TTL from when the SET's reply arrived " +
				"(Validity = TTL + the time the acquire took)",
			New: newUserToken("user-token-validity-from-reply", userTokenValidityFromReply),
		},
		{
			Name: "user-token-two-command-expiry", Mutant: "user-token",
			Removed: "the atomic expiry: SETNX key token, then PEXPIRE key ttl as a second command (seed 002's problem 1), " +
				"so a client that dies between the two leaves a key that never expires",
			New: newUserToken("user-token-two-command-expiry", userTokenTwoCommandExpiry),
		},
		{
			Name: "user-token-error-grant", Mutant: "user-token",
			Removed: "the check of the SET's outcome: only \"taken\" (a nil reply) sends the client back to wait, so a SET NX " +
				"that failed otherwise (an error reply, a refused dial, a timeout) is taken for a grant",
			New: newUserToken("user-token-error-grant", userTokenErrorGrant),
		},
		{
			Name: "user-token-blind-renew", Mutant: "user-token-renew",
			Removed: "the owner check and the giving up of the renewal: the watchdog renews with a plain SET key token PX ttl " +
				"(overwriting whoever holds the key) and never gives the lease up (Valid is always true)",
			RenewsPerTTL: 1.0 / 3,
			New:          newUserRenew("user-token-blind-renew", true),
		},
	} {
		m.Topologies = single
		m.Summary = "Point-free mutant of " + m.Mutant + ": " + m.Removed + "."
		m.Source = src
		Register(m)
	}
}
