package algorithms

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkLocker is the ZooKeeper lock recipe as Curator's InterProcessMutex implements it (seed 001,
// 从构建分布式秒杀系统聊聊分布式锁): create an ephemeral sequential node under
// /lockchaos/<name>/, list the children sorted by sequence, hold the lock when ours is lowest,
// otherwise watch only the node just before ours (no herd) and look again when it goes. Release
// deletes our node; the session ending deletes it too.
//
//	create _c_<guid>-lock-N ──> children ──lowest?──yes──> held
//	                               ▲         └──no──> GetW(predecessor) ──event──┐
//	                               └─────────────────────────────────────────────┘
//
// The create is "protected" as in Curator: the node name carries a GUID, so after a connection
// loss during the create the client finds its node by listing the children instead of creating
// a second one that would wait forever behind the first. A node this client abandons (a create
// or delete that timed out, an acquire that gave up) is deleted in the background, by its exact
// path, until the delete is answered or the session is gone.
//
// The lease is the session: TTL is the session timeout the client asked for (the server may
// negotiate it into [2, 20] tickTimes), which is what the server enforces. Validity is 0 (held
// until released), as in the seed's Curator recipe: InterProcessMutex.acquire returns true and
// gives its holder no time bound; a holder learns of a lost session through a connection-state
// listener (LOST), which Valid stands for: a careful holder asks it before it writes. A session
// that expired (seen on reconnect as a new session id) loses the lock: Valid turns false and
// Release returns ErrNotHeld.
//
// How it fails: a holder cut off from the ensemble (docs/design.md#catalogue-and-expectations partition) or paused past the
// session timeout (client-pause) loses its session and node while it still believes it holds the
// lock, and the next waiter gets it: client class, Curator's documented session-expiry caveat.
// The ensemble's quorum keeps it safe under node-kill, leader kill and restart of one of three.
type zkLocker struct {
	cfg     Config
	conn    *zk.Conn
	dir     string
	acl     []zk.ACL
	closed  chan struct{}
	once    sync.Once
	wg      sync.WaitGroup // event drain and background deletes
	mu      sync.Mutex     // guards cfg.Rand, dirOK, closing and wg.Add
	dirOK   bool
	closing bool
	mut     zkMutation // zero for the real recipe
	// stateMu guards stateCh, closed and replaced each time the client loses its server: the
	// session event a Java watcher receives (zookeeper-latch-watcher listens to it).
	stateMu sync.Mutex
	stateCh chan struct{}
}

// zkMutation removes one mechanism from the recipe, for its mutants (mutants.go).
type zkMutation struct {
	// watchLowest makes a waiter watch the lowest node, not its predecessor, and take the lock
	// when that node goes, without listing the children again (zookeeper-watch-lowest).
	watchLowest bool
	// ignoreSession makes the holder trust its lock after its session expired: Valid is always
	// true (zookeeper-ignore-session).
	ignoreSession bool
	// latchWatcher makes a waiter hold the lock as soon as its watcher is called, without
	// listing the children again, and calls its watcher on session events too, as the Java
	// client does: ZooKeeper delivers a session event (Disconnected) to every outstanding
	// watcher (zookeeper-latch-watcher: the CountDownLatch lock of many blog posts).
	latchWatcher bool
}

// zkLease is the Lease.Data of the zookeeper algorithm.
type zkLease struct {
	Path    string
	Session int64
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func newZooKeeper(cfg Config) (Locker, error) {
	l, err := newZKLocker(cfg)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// newZooKeeperWith builds the recipe with one mechanism removed (its mutants).
func newZooKeeperWith(mut zkMutation) func(Config) (Locker, error) {
	return func(cfg Config) (Locker, error) {
		l, err := newZKLocker(cfg)
		if err != nil {
			return nil, err
		}
		l.mut = mut
		return l, nil
	}
}

// newZKLocker connects the recipe's client (shared with zookeeper+fence).
func newZKLocker(cfg Config) (*zkLocker, error) {
	opTimeoutSet := cfg.OpTimeout != 0
	cfg = cfg.withDefaults()
	if !opTimeoutSet {
		// A JVM server answers slower than Redis (much slower while its JIT warms up), so the
		// default is a third of the session (go-zookeeper gives up on a silent server after 2/3).
		cfg.OpTimeout = max(cfg.SessionTimeout/3, 50*time.Millisecond)
	}
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("zookeeper: no addresses")
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
	conn, events, err := zk.Connect(cfg.Addrs, cfg.SessionTimeout,
		zk.WithDialer(dialer), zk.WithLogger(nopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("zookeeper: %w", err)
	}
	l := &zkLocker{
		cfg:     cfg,
		conn:    conn,
		dir:     "/lockchaos/" + cfg.Name,
		acl:     zk.WorldACL(zk.PermAll),
		closed:  make(chan struct{}),
		stateCh: make(chan struct{}),
	}
	// The events must be drained; session loss is read from SessionID, which changes on expiry.
	l.wg.Go(func() {
		for ev := range events {
			// Losing the server, as Java's watchers are told: not the connecting states of the
			// start, which the drain may pass on after the first waiter has set its watch.
			if ev.Type == zk.EventSession && (ev.State == zk.StateDisconnected || ev.State == zk.StateExpired) {
				l.stateMu.Lock()
				close(l.stateCh)
				l.stateCh = make(chan struct{})
				l.stateMu.Unlock()
			}
		}
	})
	return l, nil
}

// stateChange returns a channel closed when the client next loses its server.
func (l *zkLocker) stateChange() <-chan struct{} {
	l.stateMu.Lock()
	defer l.stateMu.Unlock()
	return l.stateCh
}

// Close ends the session (the server deletes our nodes at once) and waits for background work.
func (l *zkLocker) Close() error {
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

type zkResult[T any] struct {
	v   T
	err error
}

// zkDo runs one request under OpTimeout. go-zookeeper's calls take no context, so on timeout
// the request goes on; late then delivers its eventual result (nil when it finished in time).
// As with Redis (redisBase.op), ending the caller's ctx does not cut a request off.
func zkDo[T any](l *zkLocker, f func() (T, error)) (v T, err error, late <-chan zkResult[T]) {
	ch := make(chan zkResult[T], 1)
	go func() {
		v, err := f()
		ch <- zkResult[T]{v, err}
	}()
	t := time.NewTimer(l.cfg.OpTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.v, r.err, nil
	case <-t.C:
		err = fmt.Errorf("zookeeper request: %w", context.DeadlineExceeded)
	case <-l.closed:
		err = zk.ErrClosing
	}
	return v, err, ch
}

// ensureDir creates /lockchaos/<name> and its parent once.
func (l *zkLocker) ensureDir(ctx context.Context) error {
	l.mu.Lock()
	ok := l.dirOK
	l.mu.Unlock()
	if ok {
		return nil
	}
	for _, p := range []string{"/lockchaos", l.dir} {
		_, err, _ := zkDo(l, func() (string, error) { return l.conn.Create(p, nil, 0, l.acl) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	l.mu.Lock()
	l.dirOK = true
	l.mu.Unlock()
	return nil
}

var errNodeGone = errors.New("our lock node is gone (session expired)")

// Acquire creates our node and waits until it is the lowest, or ctx ends.
func (l *zkLocker) Acquire(ctx context.Context) (Lease, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Lease{}, fmt.Errorf("zookeeper acquire: %w", err)
		}
		if err := l.waitSession(ctx); err != nil {
			return Lease{}, fmt.Errorf("zookeeper acquire: %w", err)
		}
		if err := l.ensureDir(ctx); err != nil {
			return Lease{}, fmt.Errorf("zookeeper acquire: %w", err)
		}
		// The grant comes when our node becomes the lowest, any time after its create: the create
		// is the attempt (a retry after errNodeGone is a new one).
		MarkAttempt(ctx)
		path, sid, err := l.create(ctx)
		if err != nil {
			return Lease{}, fmt.Errorf("zookeeper acquire: %w", err)
		}
		if err := l.cfg.Point(ctx, "acquire:after-create"); err != nil {
			if ctx.Err() != nil {
				// Alive, only out of time (a pause outlived the acquire's deadline): give the
				// node up, or it would block every waiter for as long as our session lives. A
				// crashed client (any other point error) leaves it, as a dead process does.
				l.deleteLater(path, sid)
			}
			return Lease{}, stoppedHolding("acquire:after-create", err)
		}
		err = l.wait(ctx, path, sid)
		switch {
		case err == nil:
			st := l.cfg.SessionTimeout
			return Lease{TTL: st, Data: zkLease{Path: path, Session: sid}}, nil
		case errors.Is(err, errNodeGone):
			continue // the old session took the node with it: start again in the new one
		}
		l.deleteLater(path, sid)
		return Lease{}, fmt.Errorf("zookeeper acquire: %w", err)
	}
}

// waitSession waits until the client has a session (as Curator blocks until connected), so a
// create is not queued while reconnecting and then timed out with an unknown outcome.
func (l *zkLocker) waitSession(ctx context.Context) error {
	for l.conn.State() != zk.StateHasSession {
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("no session (%v): %w", l.conn.State(), ctx.Err())
		case <-l.closed:
			t.Stop()
			return zk.ErrClosing
		case <-t.C:
		}
	}
	return nil
}

// create makes our protected ephemeral sequential node and returns its path and session.
func (l *zkLocker) create(ctx context.Context) (string, int64, error) {
	l.mu.Lock()
	guid := fmt.Sprintf("%016x%016x", l.cfg.Rand.Uint64(), l.cfg.Rand.Uint64())
	l.mu.Unlock()
	prefix := l.dir + "/_c_" + guid + "-lock-"
	var err error
	for range 3 {
		var path string
		var late <-chan zkResult[string]
		path, err, late = zkDo(l, func() (string, error) {
			return l.conn.Create(prefix, nil, zk.FlagEphemeral|zk.FlagSequence, l.acl)
		})
		switch {
		case err == nil:
			return path, l.conn.SessionID(), nil
		case late != nil:
			// Still in flight: it may yet create a node that would block everyone behind it.
			l.spawn(func() {
				select {
				case r := <-late:
					if r.err == nil {
						l.deleteLoop(r.v, l.conn.SessionID())
					} else {
						l.deleteProtected(guid)
					}
				case <-l.closed:
				}
			})
			return "", 0, &UnknownError{Op: "zookeeper create", Err: err}
		case errors.Is(err, zk.ErrSessionExpired):
			// The node cannot exist: its session is gone.
		case errors.Is(err, zk.ErrConnectionClosed):
			found, sid, ferr := l.findProtected(ctx, guid)
			if ferr != nil {
				l.spawn(func() { l.deleteProtected(guid) })
				return "", 0, &UnknownError{Op: "zookeeper create (connection lost)", Err: errors.Join(err, ferr)}
			}
			if found != "" {
				return found, sid, nil
			}
		default:
			return "", 0, fmt.Errorf("create %s: %w", prefix, err)
		}
	}
	return "", 0, fmt.Errorf("create %s: %w", prefix, err)
}

// findProtected looks for our node by its GUID among the lock's children.
func (l *zkLocker) findProtected(ctx context.Context, guid string) (string, int64, error) {
	children, err, _ := zkDo(l, func() ([]string, error) {
		c, _, err := l.conn.Children(l.dir)
		return c, err
	})
	if err != nil {
		return "", 0, err
	}
	sid := l.conn.SessionID()
	for _, c := range children {
		if strings.HasPrefix(c, "_c_"+guid+"-") {
			return l.dir + "/" + c, sid, nil
		}
	}
	return "", sid, nil
}

// sequence is a child's sequence number: the digits after the last "lock-".
func sequence(child string) string {
	i := strings.LastIndex(child, "lock-")
	if i < 0 {
		return ""
	}
	return child[i+len("lock-"):]
}

// wait returns nil once our node is the lowest, errNodeGone if it vanished.
func (l *zkLocker) wait(ctx context.Context, path string, sid int64) error {
	ours := path[len(l.dir)+1:]
	for {
		if l.conn.SessionID() != sid {
			return errNodeGone
		}
		children, err, _ := zkDo(l, func() ([]string, error) {
			c, _, err := l.conn.Children(l.dir)
			return c, err
		})
		if err != nil {
			return fmt.Errorf("children of %s: %w", l.dir, err)
		}
		children = slices.DeleteFunc(children, func(c string) bool { return sequence(c) == "" })
		// Sequence numbers are zero-padded to ten digits, so they sort as strings.
		slices.SortFunc(children, func(a, b string) int { return strings.Compare(sequence(a), sequence(b)) })
		i := slices.Index(children, ours)
		switch {
		case i < 0:
			return errNodeGone
		case i == 0:
			return nil
		}
		pred := l.dir + "/" + children[i-1]
		if l.mut.watchLowest {
			pred = l.dir + "/" + children[0]
		}
		var session <-chan struct{} // nil (never ready) but for the latch mutant
		if l.mut.latchWatcher {
			session = l.stateChange()
		}
		// GetW, as Curator uses getData, sets no watch when the node is already gone.
		ch, err, _ := zkDo(l, func() (<-chan zk.Event, error) {
			_, _, ch, err := l.conn.GetW(pred)
			return ch, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			if l.mut.watchLowest {
				return nil // the mutant's bug: "the lowest is gone, so it is mine"
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("watch %s: %w", pred, err)
		}
		// Look again now and then anyway: a watch lost with a session must not hang us.
		t := time.NewTimer(l.cfg.SessionTimeout)
		select {
		case <-ch:
			if l.mut.watchLowest || l.mut.latchWatcher {
				t.Stop()
				return nil
			}
		case <-session:
			t.Stop()
			return nil // the latch mutant's bug: "my watcher was called, so the lock is mine"
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-l.closed:
			t.Stop()
			return zk.ErrClosing
		}
		t.Stop()
	}
}

// Valid reports whether the session the lock was taken in is still the client's session. The
// client learns that a session expired only when it reaches the ensemble again (the server tells
// it on reconnect), as a Curator user learns it from the LOST connection state; while it is cut
// off it cannot know, and Valid stays true (docs/design.md#catalogue-and-expectations partition: the session-expiry caveat).
func (l *zkLocker) Valid(lease Lease) bool {
	if l.mut.ignoreSession {
		return true
	}
	zl, ok := lease.Data.(zkLease)
	return ok && l.conn.SessionID() == zl.Session && l.conn.State() != zk.StateExpired
}

// Release deletes our node; ErrNotHeld when it is gone or its session was lost.
func (l *zkLocker) Release(ctx context.Context, lease Lease) error {
	zl, ok := lease.Data.(zkLease)
	if !ok {
		return fmt.Errorf("zookeeper release: lease has no node (Data %T)", lease.Data)
	}
	if err := l.cfg.Point(ctx, "release:before-delete"); err != nil {
		return stopped("release:before-delete", err)
	}
	select {
	case <-l.closed:
		return ErrNotHeld // Close ended the session; the server deletes its nodes
	default:
	}
	if l.conn.SessionID() != zl.Session {
		return ErrNotHeld
	}
	_, err, late := zkDo(l, func() (struct{}, error) { return struct{}{}, l.conn.Delete(zl.Path, -1) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrSessionExpired):
		return ErrNotHeld
	case late != nil:
		l.spawn(func() {
			select {
			case r := <-late:
				if r.err != nil {
					l.deleteLoop(zl.Path, zl.Session)
				}
			case <-l.closed:
			}
		})
		return &UnknownError{Op: "zookeeper delete", Err: err}
	}
	// Any other failure (no server reachable: the ensemble is electing a leader) is retried in the
	// background, as Curator's guaranteed delete does: an ephemeral node left behind by a live
	// session would block every waiter for as long as the session lives. The release will take
	// effect later, so its outcome is unknown.
	l.deleteLater(zl.Path, zl.Session)
	return &UnknownError{Op: "zookeeper delete", Err: err}
}

// spawn runs f in the background unless the locker is closing.
func (l *zkLocker) spawn(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return
	}
	l.wg.Go(f)
}

// deleteLater deletes an abandoned node of ours in the background.
func (l *zkLocker) deleteLater(path string, sid int64) {
	l.spawn(func() { l.deleteLoop(path, sid) })
}

// deleteLoop deletes path (exact path, so never another client's node) until the delete is
// answered, the session that owns it is gone, or the locker is closed.
func (l *zkLocker) deleteLoop(path string, sid int64) {
	for range 100 {
		if l.conn.SessionID() != sid {
			return
		}
		_, err, _ := zkDo(l, func() (struct{}, error) { return struct{}{}, l.conn.Delete(path, -1) })
		if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing) {
			return
		}
		select {
		case <-l.closed:
			return
		case <-time.After(l.cfg.RetryDelay):
		}
	}
}

// deleteProtected finds the node of a create whose outcome is unknown and deletes it.
func (l *zkLocker) deleteProtected(guid string) {
	for range 100 {
		path, sid, err := l.findProtected(context.Background(), guid)
		if err == nil {
			if path != "" {
				l.deleteLoop(path, sid)
			}
			return
		}
		select {
		case <-l.closed:
			return
		case <-time.After(l.cfg.RetryDelay):
		}
	}
}

func init() {
	Register(Info{
		Name:        "zookeeper",
		ReferenceOn: []string{"zookeeper"},
		Summary:     "Ephemeral sequential node, watch only the predecessor, delete on release; session loss = lock loss.",
		Source:      "seed 001 (从构建分布式秒杀系统聊聊分布式锁: Curator InterProcessMutex)",
		Topologies:  []string{topoZooKeeper},
		Points:      []string{"acquire:after-create", "release:before-delete"},
		New:         newZooKeeper,
	})
}
