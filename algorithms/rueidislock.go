package algorithms

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidisLocker is github.com/redis/rueidis/rueidislock (a package of the rueidis module) as its
// README uses it: one rueidislock.Locker per client with its defaults — KeyMajority 2, so a
// majority of 3 keys rueidislock:{0,1,2}:<name>, each SET NX PXAT in a Lua script that also GETs
// the key so client-side caching (CLIENT TRACKING) watches it; the keys are extended every
// ExtendInterval (KeyValidity/2) while held — and KeyValidity = the lease's TTL.
// WithContext(ctx, name) blocks until the majority is held and returns a context that the
// library cancels when the majority is lost ("canceled automatically and immediately once the
// KeyMajority is not held anymore", its README); cancel() releases.
//
// The majority is of keys on one Redis (the library's default, as the issue asks; its README
// suggests KeyMajority 1 for one instance): all the keys live and die together, so it buys no
// safety over one key. The lease has no fixed validity (Validity 0: auto-extended until
// released); the careful holder's Valid is that context not done, which is all the library
// tells. Client-side caching is left on (the default, and what makes the context's cancellation
// "immediate": an invalidation of a watched key triggers an extend, which finds the key gone):
// Redis 7.0 here speaks RESP3 and the proxies pass its push messages through unparsed.
//
// The client dials through this client's proxies: InitAddress is the client's (proxied) node
// address, or its Sentinel addresses with Sentinel.MasterSet; DialCtxFn maps a server's real
// address to the proxy (Config.Dial), as the other Redis clients do. Everything else is the
// library's default (rueidis retries its retryable scripts on network errors; its request
// deadlines are TryNextAfter, 20 ms, per key for an acquire, and up to the new expiry for an
// extend). The library reads time.Now (its PXAT expiries are the client's wall clock, which the
// clock-skew fault, acting on Config.Clock, cannot reach) and draws its own tokens.
//
// WithContext's context is the holder's for as long as the lock lives, so the harness's acquire
// context (cancelled when Acquire returns) is not passed in: a context of the locker's own is,
// with the acquire's values (the attempt hook); when the acquire's ctx ends first, that context
// is cancelled, which ends WithContext, and a lock won meanwhile is released. A wrapper around
// the rueidis client only watches the scripts: it marks each try's first acquire script as an attempt, notes
// an acquire script whose outcome is unknown (a timeout, a lost connection: it may have set a
// key), and counts the keys a release deletes; it changes nothing sent.
type rueidisLocker struct {
	cfg Config
	lk  rueidislock.Locker
	w   *watchedRueidis
}

// The library's acquire and release scripts (v1.0.79), to recognise them on the wire.
const (
	rueidisAcquireScript = `local r = redis.call("SET",KEYS[1],ARGV[1],"NX","PXAT",ARGV[2]);redis.call("GET",KEYS[1]);return r`
	rueidisDelScript     = `if redis.call("GET",KEYS[1]) == ARGV[1] then return redis.call("DEL",KEYS[1]) end;return 0`
)

var rueidisAcquireSHA, rueidisDelSHA = sha1Hex(rueidisAcquireScript), sha1Hex(rueidisDelScript)

func sha1Hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// rueidisLease is the Lease.Data of rueidislock: WithContext's context and cancel.
type rueidisLease struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newRueidisLock(cfg Config) (Locker, error) {
	cfg = cfg.withDefaults()
	opt := rueidis.ClientOption{InitAddress: cfg.Addrs}
	if cfg.Sentinel != nil {
		opt.InitAddress = cfg.Sentinel.Addrs
		opt.Sentinel = rueidis.SentinelOption{MasterSet: cfg.Sentinel.MasterName}
	} else if len(cfg.Addrs) != 1 {
		return nil, fmt.Errorf("rueidislock: want one Redis address or a Sentinel config, got %d addresses", len(cfg.Addrs))
	}
	if dial := cfg.Dial; dial != nil {
		opt.DialCtxFn = func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		}
	}
	l := &rueidisLocker{cfg: cfg}
	lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: opt,
		KeyValidity:  cfg.TTL,
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			l.w = &watchedRueidis{Client: c}
			return l.w, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: %w", err)
	}
	l.lk = lk
	return l, nil
}

// Acquire is WithContext on a context of the lock's own, until it returns or ctx ends.
func (l *rueidisLocker) Acquire(ctx context.Context) (Lease, error) {
	src, stop := context.WithCancel(context.WithoutCancel(ctx))
	type result struct {
		ctx    context.Context
		cancel context.CancelFunc
		err    error
	}
	l.w.unknown.Store(false)
	got := make(chan result, 1)
	go func() {
		c, cancel, err := l.lk.WithContext(src, l.cfg.Name)
		got <- result{c, cancel, err}
	}()
	var r result
	select {
	case r = <-got:
	case <-ctx.Done():
		stop()
		r = <-got // WithContext ends with src
		if r.err == nil {
			r.cancel() // won as ctx ended: give it back
			return Lease{}, &UnknownError{Op: "rueidislock acquire (won as ctx ended, released)", Err: ctx.Err()}
		}
		r.err = fmt.Errorf("%w (%w)", r.err, ctx.Err())
	}
	if r.err != nil {
		stop()
		err := fmt.Errorf("rueidislock acquire: %w", r.err)
		if l.w.unknown.Load() {
			return Lease{}, &UnknownError{Op: "rueidislock acquire (a key's SET may have landed)", Err: err}
		}
		return Lease{}, err
	}
	return Lease{TTL: l.cfg.TTL, Data: &rueidisLease{ctx: r.ctx, cancel: func() { r.cancel(); stop() }}}, nil
}

// Valid is the library's word: the lock's context is not done.
func (l *rueidisLocker) Valid(lease Lease) bool {
	rl, ok := lease.Data.(*rueidisLease)
	return ok && rl.ctx.Err() == nil
}

// Release is the lock's cancel: the library deletes its keys (compare-and-delete) and returns
// when every key's watcher has ended. nil when it deleted a majority, ErrNotHeld when the lock's
// context was already done (the library had given the lock up) or fewer keys were ours, unknown
// when ctx ended first or a delete may have been cut off.
func (l *rueidisLocker) Release(ctx context.Context, lease Lease) error {
	rl, ok := lease.Data.(*rueidisLease)
	if !ok {
		return fmt.Errorf("rueidislock release: lease has no context (Data %T)", lease.Data)
	}
	lost := rl.ctx.Err() != nil
	l.w.deleted.Store(0)
	l.w.delUnknown.Store(false)
	done := make(chan struct{})
	go func() {
		rl.cancel()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return &UnknownError{Op: "rueidislock release", Err: ctx.Err()}
	}
	switch {
	case lost:
		return ErrNotHeld
	case l.w.deleted.Load() >= 2: // KeyMajority
		return nil
	case l.w.delUnknown.Load():
		return &UnknownError{Op: "rueidislock release", Err: errors.New("a key's delete was cut off")}
	}
	return ErrNotHeld
}

// Close closes the locker (its keys' watchers end and delete what they hold) and its client.
func (l *rueidisLocker) Close() error {
	l.lk.Close()
	return nil
}

// watchedRueidis passes everything to the rueidis client and watches the lock's scripts.
type watchedRueidis struct {
	rueidis.Client
	unknown    atomic.Bool  // an acquire script's outcome was unknown
	deleted    atomic.Int32 // release scripts that deleted a key
	delUnknown atomic.Bool  // a release script's outcome was unknown
}

func (w *watchedRueidis) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	acq, del := false, false
	if args := cmd.Commands(); len(args) > 1 {
		switch strings.ToUpper(args[0]) {
		case "EVALSHA":
			acq, del = args[1] == rueidisAcquireSHA, args[1] == rueidisDelSHA
		case "EVAL":
			acq, del = args[1] == rueidisAcquireScript, args[1] == rueidisDelScript
		}
	}
	if acq && strings.EqualFold(args0(cmd), "EVALSHA") && strings.HasPrefix(cmd.Commands()[3], "rueidislock:0:") {
		// A try computes the PXAT expiry of all its keys just before it sends key 0's script:
		// that send starts the lease, not the later keys' (marked, they made the checker
		// believe a lease ran up to 20 ms longer than the keys did).
		MarkAttempt(ctx)
	}
	r := w.Client.Do(ctx, cmd)
	err := r.Error()
	definite := err == nil || rueidis.IsRedisNil(err) || rueidisNotSent(err)
	if _, ok := rueidis.IsRedisErr(err); ok {
		definite = true
	}
	switch {
	case acq && !definite:
		w.unknown.Store(true)
	case del && !definite:
		w.delUnknown.Store(true)
	case del && err == nil:
		if n, _ := r.AsInt64(); n == 1 {
			w.deleted.Add(1)
		}
	}
	return r
}

// args0 is a command's name.
func args0(cmd rueidis.Completed) string {
	if args := cmd.Commands(); len(args) > 0 {
		return args[0]
	}
	return ""
}

// rueidisNotSent reports whether err says the request never left: the connection could not be
// made (refused, or the dial itself failed), or the client is closing.
func rueidisNotSent(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial" || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, rueidis.ErrClosing)
}

func init() {
	Register(Info{
		Name: "rueidislock",
		Summary: "github.com/redis/rueidis/rueidislock with its defaults: a majority of 3 keys on one Redis (SET NX " +
			"PXAT), auto-extended; the holder trusts the context WithContext returns until it is cancelled.",
		Source:       "github.com/redis/rueidis v1.0.79 (rueidislock)",
		Topologies:   []string{topoRedisSingle, topoRedisSentinel},
		RenewsPerTTL: 0.5, // ExtendInterval: KeyValidity/2
		New:          newRueidisLock,
	})
}
