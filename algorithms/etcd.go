package algorithms

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

const topoEtcd = "etcd"

// etcdLocker is etcd's own lock recipe, go.etcd.io/etcd/client/v3/concurrency.Mutex, as its docs
// show it: one Session per client (a lease kept alive in the background), and per acquire
// NewMutex(session, "/lockchaos/<name>").Lock(ctx). Lock puts <prefix>/<lease id> under the
// session's lease and waits until every key of the prefix with a smaller create revision is
// deleted; the oldest key holds the lock.
//
// Session TTL: etcd leases are whole seconds, so the session asks for ceil(Config.TTL) seconds
// (the catalogue's 500 ms becomes 1 s); the server may raise it to its floor of 1.5 election
// timeouts (750 ms on the lockchaos etcd topology, 2 s with etcd's defaults). Lease.TTL is what
// the server granted.
//
// Fence: the lock key's create revision. The holder's key is the oldest of the prefix, so every
// later holder's key was created later and has a larger revision (etcd's docs name it as the
// fencing token; Mutex.Header().Revision grows as well, but only the create revision can be
// checked by the resource against etcd itself).
//
// Validity is 0 (held until released): Lock returns with no time bound and the session renews
// the lease in the background, so a holder cannot tell from its own clock when it stops holding.
// That is Jepsen's etcd 3.4.3 finding (jepsen.io/analyses/etcd-3.4.3): a client paused or cut off
// past its lease TTL loses the lock while it still believes it holds it, and etcd locks are safe
// only with fencing.
//
// Release deletes the key as Mutex.Unlock does, guarded by the mutex's IsOwner comparison so it
// can tell ErrNotHeld (the lease expired) from a delete. The recipe is idempotent within a
// session: a Lock whose outcome is unknown leaves at most our own key, which the next Lock of the
// same session takes over instead of queueing behind it. A Lock that does not return soon after
// ctx ends (its cleanup delete runs without a deadline, and hangs on a connection to a killed
// member) costs the client its session: the lease is revoked and the next Lock starts afresh.
type etcdLocker struct {
	cfg    Config
	cli    *clientv3.Client
	ttl    int // the session TTL asked for, in seconds
	prefix string
	life   context.Context // the sessions' keepalives live as long as the locker
	stop   context.CancelFunc
	wg     sync.WaitGroup // Locks still in flight after their Acquire gave up, and revokes

	mu   sync.Mutex
	sess *concurrency.Session
	gttl time.Duration // the TTL the server granted to sess
}

// etcdLease is the Lease.Data of the etcd algorithm.
type etcdLease struct {
	Key   string
	owner clientv3.Cmp       // the key still has our create revision
	m     *concurrency.Mutex // the Mutex that holds it (etcd-unlock-retry releases through it)
}

// etcdSessionTTL is the session TTL for a lock TTL: whole seconds, rounded up, at least 1.
func etcdSessionTTL(ttl time.Duration) int {
	return max(int(math.Ceil(ttl.Seconds())), 1)
}

func newEtcd(cfg Config) (Locker, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("etcd: no addresses")
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Addrs,
		DialTimeout: max(cfg.OpTimeout, 2*time.Second),
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	life, stop := context.WithCancel(context.Background())
	return &etcdLocker{
		cfg: cfg, cli: cli, ttl: etcdSessionTTL(cfg.TTL), prefix: "/lockchaos/" + cfg.Name,
		life: life, stop: stop,
	}, nil
}

// Close stops the session's keepalives (the server expires its lease) and closes the client.
func (l *etcdLocker) Close() error {
	l.stop()
	err := l.cli.Close()
	l.wg.Wait()
	return err
}

// session returns the live session, or a new one when there is none or its lease is gone.
func (l *etcdLocker) session(ctx context.Context) (*concurrency.Session, time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess != nil {
		select {
		case <-l.sess.Done():
			l.sess = nil // the keepalive saw the lease expire (or gave up on it)
		default:
			return l.sess, l.gttl, nil
		}
	}
	// Grant under our own timeout: NewSession would grant under the session's lifetime context.
	// A grant whose answer is lost leaves a lease without keys, which expires harmlessly.
	gctx, cancel := context.WithTimeout(ctx, max(l.cfg.OpTimeout, time.Duration(l.ttl)*time.Second/2))
	defer cancel()
	g, err := l.cli.Grant(gctx, int64(l.ttl))
	if err != nil {
		return nil, 0, fmt.Errorf("grant a %ds lease: %w", l.ttl, err)
	}
	s, err := concurrency.NewSession(l.cli, concurrency.WithLease(g.ID), concurrency.WithTTL(l.ttl), concurrency.WithContext(l.life))
	if err != nil {
		return nil, 0, fmt.Errorf("session: %w", err)
	}
	l.sess, l.gttl = s, time.Duration(g.TTL)*time.Second
	return s, l.gttl, nil
}

// dropSession forgets s (its lease is gone) so the next acquire starts a new one.
func (l *etcdLocker) dropSession(s *concurrency.Session) {
	l.mu.Lock()
	if l.sess == s {
		l.sess = nil
	}
	l.mu.Unlock()
	s.Orphan()
}

// abandonSession gives up s while a Lock in it is still in flight: its keepalives stop and its
// lease is revoked in the background (or expires), which deletes whatever key that Lock put or
// may yet put, so it can neither hold the lock late nor queue ahead of this client's next Lock,
// which starts in a new session under a new key.
func (l *etcdLocker) abandonSession(s *concurrency.Session) {
	l.dropSession(s)
	l.wg.Go(func() {
		ctx, cancel := context.WithTimeout(l.life, time.Duration(l.ttl)*time.Second)
		defer cancel()
		_, _ = l.cli.Revoke(ctx, s.Lease())
	})
}

// Acquire is Mutex.Lock(ctx) in the client's session.
func (l *etcdLocker) Acquire(ctx context.Context) (Lease, error) {
	for {
		lease, retry, err := l.lock(ctx)
		if !retry || ctx.Err() != nil {
			return lease, err
		}
	}
}

// lock runs one Mutex.Lock; retry is true when the session was gone and a new one may succeed.
func (l *etcdLocker) lock(ctx context.Context) (_ Lease, retry bool, _ error) {
	s, ttl, err := l.session(ctx)
	if err != nil {
		return Lease{}, false, fmt.Errorf("etcd acquire: %w", err)
	}
	m := concurrency.NewMutex(s, l.prefix)
	MarkAttempt(ctx) // a new session's key: the grant, if any, comes from this Lock
	done := make(chan error, 1)
	l.wg.Go(func() { done <- m.Lock(ctx) })
	select {
	case err = <-done:
	case <-ctx.Done():
		// Lock cleans up after a cancelled wait with a delete under the client's own context,
		// which has no deadline: on a connection to a dead member it can hang. Give it
		// OpTimeout, then abandon the whole session.
		t := time.NewTimer(l.cfg.OpTimeout)
		select {
		case err = <-done:
			t.Stop()
		case <-t.C:
			l.abandonSession(s)
			return Lease{}, false, &UnknownError{Op: "etcd lock (still in flight; its session is revoked)", Err: ctx.Err()}
		}
	}
	if err == nil {
		owner := m.IsOwner()
		return Lease{Fence: createRevision(owner, m.Header()), TTL: ttl, Data: etcdLease{Key: m.Key(), owner: owner, m: m}}, false, nil
	}
	err = fmt.Errorf("etcd acquire: %w", err)
	switch {
	case errors.Is(err, concurrency.ErrSessionExpired):
		l.dropSession(s) // Lock found our key gone with the lease
		return Lease{}, true, err
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		l.dropSession(s) // the put was refused: the lease expired before it
		return Lease{}, true, err
	case m.Key() == "\x00":
		return Lease{}, false, err // Lock's own cleanup deleted our key
	case etcdDefinite(err):
		return Lease{}, false, err
	}
	return Lease{}, false, &UnknownError{Op: "etcd lock", Err: err}
}

// createRevision is the lock key's create revision, which IsOwner compares against.
func createRevision(owner clientv3.Cmp, hdr *pb.ResponseHeader) uint64 {
	if cr, ok := owner.TargetUnion.(*pb.Compare_CreateRevision); ok && cr.CreateRevision > 0 {
		return uint64(cr.CreateRevision)
	}
	return uint64(hdr.GetRevision())
}

// Release deletes our key if it is still ours; ErrNotHeld when it is gone.
func (l *etcdLocker) Release(ctx context.Context, lease Lease) error {
	el, ok := lease.Data.(etcdLease)
	if !ok {
		return fmt.Errorf("etcd release: lease has no key (Data %T)", lease.Data)
	}
	if err := l.cfg.Point(ctx, "release:before-delete"); err != nil {
		return stopped("release:before-delete", err)
	}
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.OpTimeout)
	defer cancel()
	resp, err := l.cli.Txn(octx).If(el.owner).Then(clientv3.OpDelete(el.Key)).Commit()
	switch {
	case err != nil && etcdDefinite(err):
		return fmt.Errorf("etcd release: %w", err)
	case err != nil:
		return &UnknownError{Op: "etcd delete", Err: err}
	case !resp.Succeeded:
		return ErrNotHeld
	}
	return nil
}

// etcdDefinite says the server refused the request (it did not take effect); timeouts, lost
// connections and "request timed out" replies (the proposal may still commit) are unknown.
func etcdDefinite(err error) bool {
	var ee rpctypes.EtcdError
	if !errors.As(err, &ee) {
		return false
	}
	switch ee {
	case rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost:
		return false
	}
	return true
}

func init() {
	Register(Info{
		Name:        "etcd",
		ReferenceOn: []string{"etcd"},
		Summary:     "etcd's concurrency.Mutex in a session of ceil(TTL) seconds; fence = the lock key's create revision.",
		Source:      "go.etcd.io/etcd/client/v3/concurrency v3.5.35; Jepsen etcd 3.4.3",
		Topologies:  []string{topoEtcd},
		Points:      []string{"release:before-delete"},
		// Every grant carries its fence, but Fenced stays false: the catalogue runs etcd as
		// Jepsen did and as most users deploy it, with a resource that does not check fences.
		New: newEtcd,
	})
}

// etcdUnlockLocker is etcd whose release is concurrency.Mutex.Unlock itself, with the retry a
// caller that must not leave its key behind adds: an Unlock that fails (its reply lost, the delete
// perhaps done) is tried again in the background by the same Mutex, retryAfter later and then
// every retryAfter until one succeeds. In v3.5.35 Unlock is a Delete of the key by name
// (<prefix>/<lease id>), and a Mutex whose Unlock failed keeps that name, so a retry that comes
// after the same session locked again deletes the newer lock: etcd-io/etcd #22082. With fenced
// (etcd-unlock-retry-fenced), every Unlock, the retries too, is the delete PR #22115 makes of it:
// a Txn that deletes the key only while it has the create revision the Mutex was granted
// (Mutex.IsOwner), as the etcd algorithm's own release does.
type etcdUnlockLocker struct {
	*etcdLocker
	retryAfter time.Duration
	fenced     bool
}

// etcdUnlockRetryAfter is when a failed Unlock is tried again (and the interval after that).
const etcdUnlockRetryAfter = 500 * time.Millisecond

func newEtcdUnlock(fenced bool) func(Config) (Locker, error) {
	return func(cfg Config) (Locker, error) {
		l, err := newEtcd(cfg)
		if err != nil {
			return nil, err
		}
		return &etcdUnlockLocker{etcdLocker: l.(*etcdLocker), retryAfter: etcdUnlockRetryAfter, fenced: fenced}, nil
	}
}

// unlock is Mutex.Unlock, or with fenced the owner-guarded delete (ErrNotHeld when the key is not
// the one the Mutex was granted).
func (l *etcdUnlockLocker) unlock(ctx context.Context, el etcdLease) error {
	if !l.fenced {
		return el.m.Unlock(ctx)
	}
	resp, err := l.cli.Txn(ctx).If(el.owner).Then(clientv3.OpDelete(el.Key)).Commit()
	switch {
	case err != nil:
		return err
	case !resp.Succeeded:
		return ErrNotHeld
	}
	return nil
}

// Release unlocks; a failure is retried in the background until an Unlock succeeds (or, fenced,
// finds the key not ours) or the locker closes, and reported as the first attempt's outcome.
func (l *etcdUnlockLocker) Release(ctx context.Context, lease Lease) error {
	el, ok := lease.Data.(etcdLease)
	if !ok || el.m == nil {
		return fmt.Errorf("etcd release: lease has no mutex (Data %T)", lease.Data)
	}
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.OpTimeout)
	err := l.unlock(octx, el)
	cancel()
	switch {
	case err == nil || errors.Is(err, ErrNotHeld):
		return err
	case etcdDefinite(err):
		return fmt.Errorf("etcd unlock: %w", err)
	}
	l.wg.Go(func() {
		for {
			select {
			case <-l.life.Done():
				return
			case <-time.After(l.retryAfter):
			}
			rctx, cancel := context.WithTimeout(l.life, l.cfg.OpTimeout)
			err := l.unlock(rctx, el)
			cancel()
			if err == nil || errors.Is(err, ErrNotHeld) {
				return
			}
		}
	})
	return &UnknownError{Op: "etcd unlock (retried in the background)", Err: err}
}

func init() {
	Register(Info{
		Name:       "etcd-unlock-retry",
		Summary:    "etcd's concurrency.Mutex released by Mutex.Unlock, a failed Unlock retried by the same Mutex 500 ms later (etcd-io/etcd #22082).",
		Source:     "go.etcd.io/etcd/client/v3/concurrency v3.5.35 Mutex.Unlock; etcd-io/etcd#22082",
		Topologies: []string{topoEtcd},
		New:        newEtcdUnlock(false),
	})
	Register(Info{
		Name:       "etcd-unlock-retry-fenced",
		Summary:    "etcd-unlock-retry whose Unlock deletes the key only while it has the Mutex's create revision (etcd-io/etcd PR #22115).",
		Source:     "go.etcd.io/etcd/client/v3/concurrency v3.5.35; etcd-io/etcd#22115",
		Topologies: []string{topoEtcd},
		New:        newEtcdUnlock(true),
	})
}
