package userlocks

// A ZooKeeper lock written as a user writes it from the "Locks" recipe of the ZooKeeper
// documentation with github.com/go-zookeeper/zk: create an ephemeral sequential node
// "<guid>-lock-" under /<name>, list the children, hold the lock when ours is the lowest,
// otherwise ExistsW the node just before ours. Session loss is lock loss: Valid is false once the
// session expired and while the client is not connected. Release deletes our node. No
// Config.Point. The Persistent twin creates PERSISTENT sequential nodes: a crashed holder's node
// is never removed.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/lockchaos/lockchaos/algorithms"
)

type userZK struct {
	cfg    algorithms.Config
	name   string
	conn   *zk.Conn
	dir    string // "/" + cfg.Name
	flags  int32  // the lock nodes' create flags
	closed chan struct{}
	once   sync.Once
	wg     sync.WaitGroup

	mu        sync.Mutex // guards everything below and cfg.Rand
	expiries  int        // StateExpired events seen
	connected bool       // the last session event was StateHasSession
	dirOK     bool
	closing   bool
}

// userZKLease is the Lease.Data of user-zookeeper: our node and the session it was made in.
type userZKLease struct {
	path     string
	session  int64
	expiries int
}

type userZKQuiet struct{}

func (userZKQuiet) Printf(string, ...any) {}

// NewZooKeeperLock builds the lock for one client; persistent makes the buggy twin.
func NewZooKeeperLock(cfg algorithms.Config, persistent bool) (algorithms.Locker, error) {
	name, flags := "zookeeper", int32(zk.FlagEphemeral|zk.FlagSequence)
	if persistent {
		flags = zk.FlagSequence
	}

	if cfg.Clock == nil {
		cfg.Clock = algorithms.SystemClock{}
	}
	if cfg.Name == "" {
		cfg.Name = "lock"
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = cfg.TTL
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = max(cfg.SessionTimeout/3, 50*time.Millisecond)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(uint64(cfg.Client), 0x7a6b))
	}
	if len(cfg.Addrs) == 0 || cfg.SessionTimeout <= 0 {
		return nil, fmt.Errorf("%s: needs ZooKeeper addresses and a session timeout", name)
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	dialer := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return dial(ctx, network, addr)
	}
	conn, events, err := zk.Connect(cfg.Addrs, cfg.SessionTimeout, zk.WithDialer(dialer),
		zk.WithLogger(userZKQuiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l := &userZK{cfg: cfg, name: name, conn: conn, dir: "/" + cfg.Name, flags: flags, closed: make(chan struct{})}
	l.wg.Go(func() {
		for ev := range events {
			if ev.Type != zk.EventSession {
				continue
			}
			l.mu.Lock()
			l.connected = ev.State == zk.StateHasSession
			if ev.State == zk.StateExpired {
				l.expiries++
			}
			l.mu.Unlock()
		}
	})
	return l, nil
}

// Close ends the session (the server deletes its ephemeral nodes) and waits for the goroutines.
func (l *userZK) Close() error {
	l.once.Do(func() {
		l.mu.Lock()
		l.closing = true
		l.mu.Unlock()
		close(l.closed)
		l.conn.Close()
	})
	l.wg.Wait()
	return nil
}

// background runs f unless the lock is closing.
func (l *userZK) background(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closing {
		l.wg.Go(f)
	}
}

type userZKResult[T any] struct {
	v   T
	err error
}

// userZKDo runs one go-zookeeper call under OpTimeout (the library's calls take no deadline).
// On timeout the call goes on; late then delivers its result.
func userZKDo[T any](l *userZK, f func() (T, error)) (v T, err error, late <-chan userZKResult[T]) {
	ch := make(chan userZKResult[T], 1)
	go func() {
		v, err := f()
		ch <- userZKResult[T]{v, err}
	}()
	t := time.NewTimer(l.cfg.OpTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.v, r.err, nil
	case <-t.C:
		return v, fmt.Errorf("zookeeper request: %w", context.DeadlineExceeded), ch
	case <-l.closed:
		return v, zk.ErrClosing, nil
	}
}

var errUserZKGone = errors.New("our lock node is gone (session expired)")

// Acquire creates our node and waits until it is the lowest, or ctx ends.
func (l *userZK) Acquire(ctx context.Context) (algorithms.Lease, error) {
	for {
		if err := l.waitConnected(ctx); err != nil {
			return algorithms.Lease{}, fmt.Errorf("%s acquire: %w", l.name, err)
		}
		if err := l.ensureDir(); err != nil {
			return algorithms.Lease{}, fmt.Errorf("%s acquire: %w", l.name, err)
		}
		l.mu.Lock()
		expiries := l.expiries
		l.mu.Unlock()
		path, err := l.create(ctx)
		if errors.Is(err, zk.ErrNoNode) {
			l.mu.Lock()
			l.dirOK = false // someone removed /<name>
			l.mu.Unlock()
			continue
		}
		if err != nil {
			return algorithms.Lease{}, fmt.Errorf("%s acquire: %w", l.name, err)
		}
		sid := l.conn.SessionID()
		err = l.wait(ctx, path)
		switch {
		case err == nil:
			return algorithms.Lease{TTL: l.cfg.SessionTimeout, Data: userZKLease{path, sid, expiries}}, nil
		case errors.Is(err, errUserZKGone):
			continue // the session went and took our node: start again in the new one
		}
		l.deleteLater(path)
		return algorithms.Lease{}, fmt.Errorf("%s acquire: %w", l.name, err)
	}
}

// waitConnected waits until the client has a session, so a create is not queued during a
// reconnect and then timed out with an unknown outcome.
func (l *userZK) waitConnected(ctx context.Context) error {
	for {
		l.mu.Lock()
		ok := l.connected
		l.mu.Unlock()
		if ok {
			return nil
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("not connected (%v): %w", l.conn.State(), ctx.Err())
		case <-l.closed:
			t.Stop()
			return zk.ErrClosing
		case <-t.C:
		}
	}
}

// ensureDir creates /<name> once (a plain persistent node).
func (l *userZK) ensureDir() error {
	l.mu.Lock()
	ok := l.dirOK
	l.mu.Unlock()
	if ok {
		return nil
	}
	_, err, _ := userZKDo(l, func() (string, error) { return l.conn.Create(l.dir, nil, 0, zk.WorldACL(zk.PermAll)) })
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create %s: %w", l.dir, err)
	}
	l.mu.Lock()
	l.dirOK = true
	l.mu.Unlock()
	return nil
}

// create makes our "<guid>-lock-" sequential node and returns its path.
func (l *userZK) create(ctx context.Context) (string, error) {
	l.mu.Lock()
	guid := fmt.Sprintf("%016x%016x", l.cfg.Rand.Uint64(), l.cfg.Rand.Uint64())
	l.mu.Unlock()
	prefix := l.dir + "/" + guid + "-lock-"
	path, err, late := userZKDo(l, func() (string, error) {
		return l.conn.Create(prefix, nil, l.flags, zk.WorldACL(zk.PermAll))
	})
	switch {
	case err == nil:
		return path, nil
	case late != nil:
		// Still in flight: if it creates our node, nobody would ever delete it.
		l.background(func() {
			select {
			case r := <-late:
				if r.err == nil {
					l.deleteLoop(r.v)
				} else {
					l.deleteGUID(guid)
				}
			case <-l.closed:
			}
		})
		return "", &algorithms.UnknownError{Op: "zookeeper create", Err: err}
	case errors.Is(err, zk.ErrConnectionClosed):
		// The recipe: the reply was lost, look for our guid among the children.
		found, ferr := l.findGUID(guid)
		switch {
		case ferr != nil:
			l.background(func() { l.deleteGUID(guid) })
			return "", &algorithms.UnknownError{Op: "zookeeper create (connection lost)", Err: errors.Join(err, ferr)}
		case found != "":
			return found, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return l.create(ctx) // it was not created: try once more with a new guid
	}
	return "", fmt.Errorf("create %s: %w", prefix, err)
}

// findGUID returns the path of our node with guid, "" if there is none.
func (l *userZK) findGUID(guid string) (string, error) {
	children, err, _ := userZKDo(l, func() ([]string, error) {
		c, _, err := l.conn.Children(l.dir)
		return c, err
	})
	if err != nil {
		return "", err
	}
	for _, c := range children {
		if strings.HasPrefix(c, guid+"-lock-") {
			return l.dir + "/" + c, nil
		}
	}
	return "", nil
}

// userZKSeq is a child's sequence number: what follows its last "lock-" (ten digits, so they
// sort as strings).
func userZKSeq(child string) string {
	i := strings.LastIndex(child, "lock-")
	if i < 0 {
		return ""
	}
	return child[i+len("lock-"):]
}

// wait returns nil once our node is the lowest, errUserZKGone if it vanished.
func (l *userZK) wait(ctx context.Context, path string) error {
	ours := path[len(l.dir)+1:]
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		children, err, _ := userZKDo(l, func() ([]string, error) {
			c, _, err := l.conn.Children(l.dir)
			return c, err
		})
		if err != nil {
			return fmt.Errorf("children of %s: %w", l.dir, err)
		}
		children = slices.DeleteFunc(children, func(c string) bool { return userZKSeq(c) == "" })
		slices.SortFunc(children, func(a, b string) int { return strings.Compare(userZKSeq(a), userZKSeq(b)) })
		i := slices.Index(children, ours)
		switch {
		case i < 0:
			return errUserZKGone
		case i == 0:
			return nil
		}
		pred := l.dir + "/" + children[i-1]
		type existsW struct {
			ok bool
			ch <-chan zk.Event
		}
		w, err, _ := userZKDo(l, func() (existsW, error) {
			ok, _, ch, err := l.conn.ExistsW(pred)
			return existsW{ok, ch}, err
		})
		if err != nil {
			return fmt.Errorf("watch %s: %w", pred, err)
		}
		if !w.ok {
			continue // gone already: list again
		}
		// List again now and then anyway: a watch must not hang us.
		t := time.NewTimer(l.cfg.SessionTimeout)
		select {
		case <-w.ch:
		case <-t.C:
		case <-ctx.Done():
		case <-l.closed:
			t.Stop()
			return zk.ErrClosing
		}
		t.Stop()
	}
}

// Valid reports whether the lock may still be held: the session it was taken in has not expired
// and is still the client's, and the client is connected.
func (l *userZK) Valid(lease algorithms.Lease) bool {
	zl, ok := lease.Data.(userZKLease)
	if !ok {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.connected && l.expiries == zl.expiries && l.conn.SessionID() == zl.session
}

// Release deletes our node; algorithms.ErrNotHeld when it is gone already.
func (l *userZK) Release(ctx context.Context, lease algorithms.Lease) error {
	zl, ok := lease.Data.(userZKLease)
	if !ok {
		return fmt.Errorf("%s release: lease has no node (Data %T)", l.name, lease.Data)
	}
	_, err, late := userZKDo(l, func() (struct{}, error) { return struct{}{}, l.conn.Delete(zl.path, -1) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return algorithms.ErrNotHeld
	case errors.Is(err, zk.ErrClosing):
		return fmt.Errorf("%s release: %w", l.name, err)
	case late != nil:
		l.background(func() {
			select {
			case r := <-late:
				if r.err != nil {
					l.deleteLoop(zl.path)
				}
			case <-l.closed:
			}
		})
	default:
		// Lost connection, no server: the delete may have happened; make sure it does, as a node
		// left behind by a live session would block every waiter.
		l.deleteLater(zl.path)
	}
	return &algorithms.UnknownError{Op: "zookeeper delete", Err: err}
}

// deleteLater deletes an abandoned node of ours in the background.
func (l *userZK) deleteLater(path string) { l.background(func() { l.deleteLoop(path) }) }

// deleteLoop deletes path (exact: never another client's node) until the delete is answered.
func (l *userZK) deleteLoop(path string) {
	for range 100 {
		_, err, _ := userZKDo(l, func() (struct{}, error) { return struct{}{}, l.conn.Delete(path, -1) })
		if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrClosing) {
			return
		}
		select {
		case <-l.closed:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// deleteGUID finds the node of a create whose outcome was unknown and deletes it.
func (l *userZK) deleteGUID(guid string) {
	for range 100 {
		path, err := l.findGUID(guid)
		if err == nil {
			if path != "" {
				l.deleteLoop(path)
			}
			return
		}
		select {
		case <-l.closed:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}
