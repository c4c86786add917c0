package algorithms

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// zkFenceLocker is the zookeeper recipe (zookeeper.go) whose fence is the lock node's creation
// zxid (Stat.Czxid). The holder's node has the lowest sequence number among the lock's children,
// sequence numbers follow creation order, and zxids are ZooKeeper's total order of writes, so
// every later holder's node was created later and carries a larger zxid: a fencing token the
// ensemble's quorum keeps, which no single node restart or leader change can roll back.
//
// go-zookeeper's own Lock hides its node, so this builds on our recipe, which keeps the node in
// the lease; reading the zxid costs one Exists after the lock is held.
//
// How it fails: exactly as zookeeper does (a paused or partitioned holder loses its session while
// it believes it holds), but with the resource checking fences its late write carries a zxid below
// its successor's and is rejected: exclusion is violated, no update is lost.
type zkFenceLocker struct{ *zkLocker }

func newZooKeeperFence(cfg Config) (Locker, error) {
	l, err := newZKLocker(cfg)
	if err != nil {
		return nil, fmt.Errorf("zookeeper+fence: %w", err)
	}
	return &zkFenceLocker{l}, nil
}

// Acquire takes the lock as zookeeper does, then reads its node's creation zxid. If the read
// fails the node is deleted again (the lock is not held without a fence), in the background
// if need be.
func (l *zkFenceLocker) Acquire(ctx context.Context) (Lease, error) {
	lease, err := l.zkLocker.Acquire(ctx)
	if err != nil {
		return lease, err
	}
	zl := lease.Data.(zkLease)
	stat, err, _ := zkDo(l.zkLocker, func() (*zk.Stat, error) {
		ok, st, err := l.conn.Exists(zl.Path)
		if err == nil && !ok {
			err = errNodeGone
		}
		return st, err
	})
	if err == nil && l.conn.SessionID() != zl.Session {
		err = errNodeGone
	}
	if err == nil {
		lease.Fence = uint64(stat.Czxid)
		return lease, nil
	}
	err = fmt.Errorf("zookeeper+fence acquire: read the zxid of %s: %w", zl.Path, err)
	_, derr, _ := zkDo(l.zkLocker, func() (struct{}, error) { return struct{}{}, l.conn.Delete(zl.Path, -1) })
	if derr == nil || errors.Is(derr, zk.ErrNoNode) || errors.Is(derr, zk.ErrSessionExpired) {
		return Lease{}, err
	}
	l.deleteLater(zl.Path, zl.Session)
	return Lease{}, &UnknownError{Op: "zookeeper+fence acquire (the node may still be held)", Err: errors.Join(err, derr)}
}

func init() {
	Register(Info{
		Name:       "zookeeper+fence",
		Summary:    "zookeeper recipe whose fence is the lock node's creation zxid (Stat.Czxid).",
		Source:     "Kleppmann, How to do distributed locking (zxid as fencing token); seed 001's Curator recipe",
		Topologies: []string{topoZooKeeper},
		Points:     []string{"acquire:after-create", "release:before-delete"},
		Fenced:     true,
		New:        newZooKeeperFence,
	})
}
