package algorithms

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// watchdogLocker is the token lock kept alive by a watchdog, as Redisson's RLock without a lease
// time: SET key <random> NX PX ttl, then a goroutine renews the lease every TTL/3 with a Lua
// compare-and-PEXPIRE, for as long as the lock is held:
//
//	SET NX PX ──held──> every TTL/3: PEXPIRE key ttl if GET key == token
//	                       ├─ 1 ──> held until sent + TTL; next tick
//	                       └─ 0, error or timeout ──> lost: stop renewing
//
// A lease may thus be held far longer than the TTL, so Validity is 0 (until released) and the
// holder learns whether it still holds from Valid: true while the last renewal (or the SET) was
// answered and was sent less than TTL − drift ago, false from the first failed renewal on (the
// watchdog gives the lease up: a renewal that timed out may have found the key gone). Release and
// Close stop the watchdog; Release is the token lock's compare-and-delete.
//
// How it fails: a holder whose process stops (client-pause) cannot act on Valid while it is
// stopped, and writes late after its key expired, as with every lease; a failover or restart
// forgets the key. A holder cut off from Redis (partition) stops trusting its lease within TTL/3
// plus one request timeout, before the key can expire.
type watchdogLocker struct {
	*redisBase
	blind bool              // token-watchdog-blind: Valid is always true
	dogs  watchdogs[string] // by token
}

// watchdogs renew leases in the background, one watchdog per lease (keyed by K): token+watchdog's
// and bsm-redislock-refresh's.
type watchdogs[K comparable] struct {
	mu   sync.Mutex
	dogs map[K]*watchdog
}

// watchdog renews one lease.
type watchdog struct {
	mu    sync.Mutex
	until time.Time // by the client's clock: last answered renewal's send time + TTL − drift
	lost  bool
	stop  chan struct{}
	done  chan struct{}
}

// start renews lease k, held until until, every period: renew returns how long the lease now
// holds, or false when the renewal failed — the watchdog then stops and the lease is lost.
func (w *watchdogs[K]) start(k K, until time.Time, period time.Duration, renew func() (time.Time, bool)) {
	d := &watchdog{until: until, stop: make(chan struct{}), done: make(chan struct{})}
	w.mu.Lock()
	if w.dogs == nil {
		w.dogs = map[K]*watchdog{}
	}
	w.dogs[k] = d
	w.mu.Unlock()
	go func() {
		defer close(d.done)
		t := time.NewTicker(max(period, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-t.C:
			}
			until, ok := renew()
			d.mu.Lock()
			if !ok {
				d.lost = true
				d.mu.Unlock()
				return
			}
			d.until = until
			d.mu.Unlock()
		}
	}()
}

// holds reports whether lease k's watchdog still holds it at now: no renewal failed, and the last
// one answered holds it past now.
func (w *watchdogs[K]) holds(k K, now time.Time) bool {
	w.mu.Lock()
	d := w.dogs[k]
	w.mu.Unlock()
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.lost && now.Before(d.until)
}

// stop stops lease k's watchdog (if any) and waits for it, so no renewal follows.
func (w *watchdogs[K]) stop(k K) {
	w.mu.Lock()
	d := w.dogs[k]
	delete(w.dogs, k)
	w.mu.Unlock()
	if d != nil {
		close(d.stop)
		<-d.done
	}
}

// stopAll stops every watchdog.
func (w *watchdogs[K]) stopAll() {
	w.mu.Lock()
	keys := make([]K, 0, len(w.dogs))
	for k := range w.dogs {
		keys = append(keys, k)
	}
	w.mu.Unlock()
	for _, k := range keys {
		w.stop(k)
	}
}

// renewScript is Redisson's renewExpiration: extend the key only while it holds our token.
const renewScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("PEXPIRE", KEYS[1], ARGV[2])
else
    return 0
end`

func newTokenWatchdog(cfg Config) (Locker, error) {
	return newWatchdogLocker(cfg, "token+watchdog", false)
}

func newWatchdogLocker(cfg Config, name string, blind bool) (Locker, error) {
	b, err := newRedisBase(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &watchdogLocker{redisBase: b, blind: blind}, nil
}

func (l *watchdogLocker) drift() time.Duration { return l.cfg.TTL/100 + 2*time.Millisecond }

// Acquire retries SET NX PX with one fresh token until it sets the key, then starts the watchdog.
func (l *watchdogLocker) Acquire(ctx context.Context) (Lease, error) {
	tok := l.token()
	var sent time.Time
	err := retryAcquire(ctx, "token+watchdog", l.fixedDelay, func() (bool, error) {
		octx, cancel := l.op(ctx)
		defer cancel()
		sent = l.cfg.Clock.Now()
		return setNXPX(octx, l.rdb, l.cfg.Name, tok, l.cfg.TTL)
	})
	if err != nil {
		return Lease{}, err
	}
	l.dogs.start(tok, sent.Add(l.cfg.TTL-l.drift()), l.cfg.TTL/3, func() (time.Time, bool) { return l.renew(tok) })
	return Lease{TTL: l.cfg.TTL, Data: tok}, nil
}

// renew extends the key while it holds tok (renewScript): the lease then holds until the
// renewal's send time + TTL − drift.
func (l *watchdogLocker) renew(tok string) (time.Time, bool) {
	sent := l.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.OpTimeout)
	defer cancel()
	n, err := l.rdb.Eval(ctx, renewScript, []string{l.cfg.Name}, tok, l.cfg.TTL.Milliseconds()).Int64()
	return sent.Add(l.cfg.TTL - l.drift()), err == nil && n == 1
}

// Valid reports whether the watchdog still holds the lease: no renewal failed, and the last one
// answered was sent less than TTL − drift ago. The blind mutant always says yes.
func (l *watchdogLocker) Valid(lease Lease) bool {
	if l.blind {
		return true
	}
	tok, _ := lease.Data.(string)
	return l.dogs.holds(tok, l.cfg.Clock.Now())
}

// Release stops the watchdog, then deletes the key only if it still holds the lease's token.
func (l *watchdogLocker) Release(ctx context.Context, lease Lease) error {
	tok, _ := lease.Data.(string)
	l.dogs.stop(tok)
	return releaseToken(ctx, l.redisBase, "token+watchdog", lease)
}

// Close stops every watchdog and closes the client's connections.
func (l *watchdogLocker) Close() error {
	l.dogs.stopAll()
	return l.redisBase.Close()
}

func init() {
	Register(Info{
		Name:         "token+watchdog",
		Summary:      "token lock renewed by a watchdog every TTL/3 (Lua compare-and-PEXPIRE); the holder gives the lease up when a renewal fails.",
		Source:       "Redisson RLock's lock watchdog (lockWatchdogTimeout, renewExpiration); seed 003's token lock",
		Topologies:   []string{topoRedisSingle, topoRedisSentinel},
		Points:       []string{"release:before-del"},
		RenewsPerTTL: 1.0 / 3,
		New:          newTokenWatchdog,
	})
}
