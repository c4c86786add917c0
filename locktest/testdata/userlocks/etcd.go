package userlocks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// EtcdLock is etcd's concurrency.Mutex as its docs show it: one Session per client (a lease
// kept alive in the background) and per acquire NewMutex(session, prefix).Lock(ctx). The holder
// gives the lock up when its session's Done closes (the keepalive lost the lease); the NoValid
// twin never looks.
type EtcdLock struct {
	cli    *clientv3.Client
	prefix string
	ttl    int // session TTL in whole seconds
	op     time.Duration
	bug    Bug

	mu   sync.Mutex
	sess *concurrency.Session
}

type etcdHeld struct {
	m    *concurrency.Mutex
	sess *concurrency.Session
}

// NewEtcdLock builds the lock for one client on the members of cfg.Addrs (its proxies).
func NewEtcdLock(cfg algorithms.Config, bug Bug) (*EtcdLock, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Addrs, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	return &EtcdLock{
		cli: cli, prefix: "/userlocks/" + cfg.Name, ttl: max(int(math.Ceil(cfg.TTL.Seconds())), 1),
		op: opTimeout(cfg), bug: bug,
	}, nil
}

// Close ends the session (its lease expires on the server) and closes the client.
func (l *EtcdLock) Close() error {
	l.mu.Lock()
	if l.sess != nil {
		l.sess.Orphan()
	}
	l.mu.Unlock()
	return l.cli.Close()
}

// session returns the live session or starts one; the grant is bounded, as NewSession's is not.
func (l *EtcdLock) session(ctx context.Context) (*concurrency.Session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess != nil {
		select {
		case <-l.sess.Done():
			l.sess = nil
		default:
			return l.sess, nil
		}
	}
	gctx, cancel := context.WithTimeout(ctx, max(l.op, time.Duration(l.ttl)*time.Second/2))
	defer cancel()
	g, err := l.cli.Grant(gctx, int64(l.ttl))
	if err != nil {
		return nil, fmt.Errorf("grant: %w", err)
	}
	s, err := concurrency.NewSession(l.cli, concurrency.WithLease(g.ID), concurrency.WithTTL(l.ttl))
	if err != nil {
		return nil, err
	}
	l.sess = s
	return s, nil
}

// forget drops s so the next acquire starts a new session (and its lease, with any key a Lock
// left in flight may still put, is revoked or expires).
func (l *EtcdLock) forget(s *concurrency.Session) {
	l.mu.Lock()
	if l.sess == s {
		l.sess = nil
	}
	l.mu.Unlock()
	s.Orphan()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(l.ttl)*time.Second)
		defer cancel()
		_, _ = l.cli.Revoke(ctx, s.Lease())
	}()
}

// Acquire is Mutex.Lock(ctx) in the client's session.
func (l *EtcdLock) Acquire(ctx context.Context) (algorithms.Lease, error) {
	s, err := l.session(ctx)
	if err != nil {
		return algorithms.Lease{}, err
	}
	m := concurrency.NewMutex(s, l.prefix)
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Lock's cleanup after a cancelled wait has no deadline: give it a moment, then give up
		// the whole session, whose lease takes whatever key the Lock put.
		select {
		case err = <-done:
		case <-time.After(l.op):
			l.forget(s)
			return algorithms.Lease{}, &algorithms.UnknownError{Op: "etcd lock", Err: ctx.Err()}
		}
	}
	if err == nil {
		return algorithms.Lease{TTL: time.Duration(l.ttl) * time.Second, Data: etcdHeld{m, s}}, nil
	}
	if errors.Is(err, concurrency.ErrSessionExpired) || errors.Is(err, rpctypes.ErrLeaseNotFound) {
		l.forget(s)
		return algorithms.Lease{}, err
	}
	var ee rpctypes.EtcdError
	if m.Key() == "\x00" || errors.As(err, &ee) && ee != rpctypes.ErrTimeout && ee != rpctypes.ErrTimeoutDueToLeaderFail &&
		ee != rpctypes.ErrTimeoutDueToConnectionLost {
		return algorithms.Lease{}, err // Lock's own cleanup deleted our key, or the server refused
	}
	// Our key may be there, under our session: the session is kept, and its next Lock takes that
	// key over rather than queueing behind it (a new session's key would go to the back of the
	// queue each time, behind the keys of the others' abandoned waits).
	return algorithms.Lease{}, &algorithms.UnknownError{Op: "etcd lock", Err: err}
}

// Valid is false once the session's keepalive lost the lease.
func (l *EtcdLock) Valid(lease algorithms.Lease) bool {
	if l.bug == NoValid {
		return true
	}
	h, ok := lease.Data.(etcdHeld)
	if !ok {
		return false
	}
	select {
	case <-h.sess.Done():
		return false
	default:
		return true
	}
}

// Release deletes our key while it is still ours (Mutex.Unlock without the blind delete).
func (l *EtcdLock) Release(ctx context.Context, lease algorithms.Lease) error {
	h, ok := lease.Data.(etcdHeld)
	if !ok {
		return errors.New("etcd release: not our lease")
	}
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.op)
	defer cancel()
	resp, err := l.cli.Txn(octx).If(h.m.IsOwner()).Then(clientv3.OpDelete(h.m.Key())).Commit()
	if err != nil {
		return &algorithms.UnknownError{Op: "etcd delete", Err: err}
	}
	if !resp.Succeeded {
		return algorithms.ErrNotHeld
	}
	return nil
}
