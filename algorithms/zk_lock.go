package algorithms

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkLibLocker is github.com/go-zookeeper/zk's own lock recipe, zk.NewLock(conn, path, acl), as
// a user of the library takes it: one zk.Conn per client, and per acquire a new Lock on
// /lockchaos/<name> whose Lock() creates a protected ephemeral sequential node, waits on its
// predecessor and returns nil when its node is the lowest; Unlock() deletes the node.
//
// The recipe offers no way to learn the lock was lost: Lock returns nil and the holder is
// never told anything again — not when its session expires, not when its node is deleted
// (samuel/go-zookeeper #20, "Is there a way to tell if a previously acquired lock has been
// lost?", open since 2014). So this Locker is no Validator and its Validity is 0 (until
// released): what the library tells its holder is nothing, and a careful holder has nothing to
// check. A user could watch the Conn's session events themselves; that is building the listener
// the recipe lacks (the zookeeper algorithm is that recipe with it), not using this one. TTL is
// the session timeout the server enforces.
//
// Lock takes no context and cannot be cancelled. An Acquire whose ctx ends first returns, and the
// abandoned Lock goes on in the background: when it wins, it is unlocked at once (what a user who
// wraps Lock in a timeout has to do). A Lock that fails (a connection loss while it lists the
// children or waits) leaves its node behind, as the recipe does: the session deletes it.
//
// How it fails: a holder cut off from the ensemble (partition) or paused (client-pause) past
// the session timeout loses its node while it keeps writing, and it keeps believing after it
// reconnects and its client is told the session expired: client class.
type zkLibLocker struct {
	cfg  Config
	conn *zk.Conn
	path string
	acl  []zk.ACL
	wg   sync.WaitGroup // event drain and abandoned Locks
	once sync.Once
}

// zkDialer adapts a context dialer to go-zookeeper's.
func zkDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return dial(ctx, network, addr)
	}
}

func newZKLib(cfg Config) (Locker, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("zk-lock: no addresses")
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, events, err := zk.Connect(cfg.Addrs, cfg.SessionTimeout, zk.WithDialer(zkDialer(dial)),
		zk.WithLogger(nopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("zk-lock: %w", err)
	}
	l := &zkLibLocker{cfg: cfg, conn: conn, path: "/lockchaos/" + cfg.Name, acl: zk.WorldACL(zk.PermAll)}
	l.wg.Go(func() {
		for range events { // the library needs its events drained; the recipe reads none of them
		}
	})
	return l, nil
}

// Acquire is zk.NewLock(...).Lock(), until it returns or ctx ends.
func (l *zkLibLocker) Acquire(ctx context.Context) (Lease, error) {
	lk := zk.NewLock(l.conn, l.path, l.acl)
	done := make(chan error, 1)
	MarkAttempt(ctx)
	go func() { done <- lk.Lock() }()
	select {
	case err := <-done:
		if err != nil {
			return Lease{}, fmt.Errorf("zk-lock acquire: %w", err)
		}
		return Lease{TTL: l.cfg.SessionTimeout, Data: lk}, nil
	case <-ctx.Done():
		l.wg.Go(func() {
			if err := <-done; err == nil {
				_ = lk.Unlock()
			}
		})
		return Lease{}, fmt.Errorf("zk-lock acquire: %w", ctx.Err())
	}
}

// Release is Unlock(): ErrNotHeld when the node was gone or its session expired.
func (l *zkLibLocker) Release(ctx context.Context, lease Lease) error {
	lk, ok := lease.Data.(*zk.Lock)
	if !ok {
		return fmt.Errorf("zk-lock release: lease has no lock (Data %T)", lease.Data)
	}
	done := make(chan error, 1)
	go func() { done <- lk.Unlock() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		return &UnknownError{Op: "zk-lock unlock", Err: ctx.Err()}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrNotLocked):
		return ErrNotHeld
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrClosing):
		return &UnknownError{Op: "zk-lock unlock", Err: err}
	}
	return fmt.Errorf("zk-lock unlock: %w", err)
}

// Close ends the session (the server deletes our nodes) and waits for abandoned Locks, which
// the closed connection ends.
func (l *zkLibLocker) Close() error {
	l.once.Do(l.conn.Close)
	l.wg.Wait()
	return nil
}

func init() {
	Register(Info{
		Name: "zk-lock",
		Summary: "github.com/go-zookeeper/zk's own zk.NewLock recipe (ephemeral sequential node, wait on the " +
			"predecessor); it never tells its holder the lock was lost.",
		Source:     "github.com/go-zookeeper/zk v1.0.4 (zk.NewLock)",
		Topologies: []string{topoZooKeeper},
		New:        newZKLib,
	})
}
