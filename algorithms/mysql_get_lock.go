package algorithms

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

const topoMariaDB = "mariadb"

// mysqlGetLockLocker is MySQL's and MariaDB's user-level lock as job runners and migration tools
// use it: one connection of its own per client, SELECT GET_LOCK(name, timeout) to acquire (it
// waits in the server: 1 granted, 0 timed out, NULL an error) and SELECT RELEASE_LOCK(name) to
// release (1 released, 0 held by another session, NULL no such lock).
//
// Lease: TTL 0 and Validity 0 (docs/design.md#session-locks-and-more-services), as pg-advisory's. The server holds the lock while
// the session lives, and drops it when the session ends (a disconnect, an admin's KILL, a
// restart, wait_timeout — 8 h by default — for an idle holder); the holder learns it only at its
// next statement, so the careful client's Valid asks the server (IS_USED_LOCK(name) =
// CONNECTION_ID()). The mysql-get-lock-no-valid mutant trusts the lock without asking.
//
// Where it differs from pg_advisory_lock: the wait is bounded by GET_LOCK's own timeout (here
// the time left of the acquire's context, so the server stops waiting when the client does); a
// session takes a name again without waiting (MariaDB counts it, and RELEASE_LOCK releases one
// count); the lock is named by a string of up to 64 characters, not a number; and the server
// does not report which of a dead session's statements were done.
//
// Every session logs in as the client's login says (Config.SQL): on the local server, as
// lockchaos-client-<n> (its anonymous account lets any name in), the tag by which the
// session-kill fault finds a client's sessions.
type mysqlGetLockLocker struct {
	cfg     Config
	name    string
	noValid bool // the mysql-get-lock-no-valid mutant
	db      *sql.DB

	mu   sync.Mutex
	sess *mysqlSession // nil when there is none (never connected, or dropped after an error)
}

// mysqlSession is one connection pinned out of the locker's pool: one server session. It is the
// Lease.Data of mysql-get-lock.
type mysqlSession struct {
	conn   *sql.Conn
	closed bool // dropped by the locker (guarded by the locker's mu)
}

// mysqlLockName is name as a user-level lock's name, which MariaDB bounds to 64 characters: a
// longer one is cut and given a hash of the whole.
func mysqlLockName(name string) string {
	if len(name) <= 64 {
		return name
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return fmt.Sprintf("%s-%016x", name[:47], h.Sum64())
}

func newMysqlGetLock(cfg Config) (Locker, error) { return newMysqlGetLockWith(cfg, false) }

func newMysqlGetLockWith(cfg Config, noValid bool) (*mysqlGetLockLocker, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("mysql-get-lock: no address")
	}
	if cfg.SQL == nil {
		return nil, fmt.Errorf("mysql-get-lock: %w", errNoLogin)
	}
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.DBName, mc.Net, mc.Addr = cfg.SQL.User, cfg.SQL.Password, cfg.SQL.Database, "tcp", cfg.Addrs[0]
	mc.Timeout = max(cfg.OpTimeout, time.Second)
	mc.InterpolateParams = true    // one round trip a statement, no server-side prepare
	mc.Logger = &mysql.NopLogger{} // a broken session is what the faults are for; errors are returned
	if cfg.Dial != nil {
		mc.DialFunc = cfg.Dial // through the client's proxy for the server
	}
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	// No idle connection is kept: a session given back is closed, so a dropped session ends (and
	// with it its locks) instead of waiting in the pool for its next user.
	db.SetMaxIdleConns(0)
	return &mysqlGetLockLocker{cfg: cfg, name: mysqlLockName(cfg.Name), noValid: noValid, db: db}, nil
}

// session returns the client's session, connecting when it has none.
func (l *mysqlGetLockLocker) session(ctx context.Context) (*mysqlSession, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess != nil {
		return l.sess, nil
	}
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	l.sess = &mysqlSession{conn: conn}
	return l.sess, nil
}

// drop closes s (ending its session, and with it any lock it holds) and forgets it.
func (l *mysqlGetLockLocker) drop(s *mysqlSession) {
	l.mu.Lock()
	if l.sess == s {
		l.sess = nil
	}
	already := s.closed
	s.closed = true
	l.mu.Unlock()
	if !already {
		// The pool keeps no idle connection, so Close ends the session; Raw marks it bad first so
		// that even a healthy-looking one is not kept.
		_ = s.conn.Raw(func(any) error { return driver.ErrBadConn })
		_ = s.conn.Close()
	}
}

func (l *mysqlGetLockLocker) isClosed(s *mysqlSession) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return s.closed
}

// Close ends the client's session.
func (l *mysqlGetLockLocker) Close() error {
	l.mu.Lock()
	s := l.sess
	l.mu.Unlock()
	if s != nil {
		l.drop(s)
	}
	return l.db.Close()
}

// Acquire waits in the server for the lock, for the time left of ctx (GET_LOCK's timeout, a
// little shorter so the server answers 0 before the client stops listening; without a deadline,
// in waits of a second). Any error drops the connection: its session ends, so a lock granted
// just as the wait was cut short is released with it, and the next Acquire starts on a fresh
// session.
func (l *mysqlGetLockLocker) Acquire(ctx context.Context) (Lease, error) {
	s, err := l.session(ctx)
	if err != nil {
		return Lease{}, err // nothing was asked
	}
	MarkAttempt(ctx)
	for {
		wait := time.Second
		if dl, ok := ctx.Deadline(); ok {
			wait = max(time.Until(dl)-50*time.Millisecond, 0)
		}
		var got sql.NullInt64
		err := s.conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", l.name, wait.Seconds()).Scan(&got)
		if err != nil {
			l.drop(s)
			// The wait was cut short (the driver closes the connection when ctx ends), or the
			// server refused: not granted, or granted at the last moment and released with the
			// dropped session.
			if ctx.Err() != nil {
				return Lease{}, fmt.Errorf("GET_LOCK: %w (%v)", ctx.Err(), err)
			}
			var me *mysql.MySQLError
			if errors.As(err, &me) || errors.Is(err, driver.ErrBadConn) { // an answer, or nothing sent
				return Lease{}, fmt.Errorf("GET_LOCK: %w", err)
			}
			return Lease{}, &UnknownError{Op: "GET_LOCK", Err: err}
		}
		if !got.Valid { // NULL: the server failed the wait (the session was killed meanwhile)
			l.drop(s)
			return Lease{}, errors.New("GET_LOCK returned NULL")
		}
		if got.Int64 == 1 {
			break
		}
		if err := ctx.Err(); err != nil {
			return Lease{}, fmt.Errorf("GET_LOCK: %w", err)
		}
		if _, ok := ctx.Deadline(); ok { // the server waited until (just before) the deadline
			return Lease{}, fmt.Errorf("GET_LOCK timed out after %v: %w", wait, context.DeadlineExceeded)
		}
	}
	if err := l.cfg.Point(ctx, "acquire:after-lock"); err != nil {
		return Lease{}, &UnknownError{Op: "GET_LOCK", Err: err}
	}
	return Lease{NoExpiry: true, Data: s}, nil
}

// Valid asks the server whether this session still holds the lock (a request bounded by
// OpTimeout, as pg-advisory's: a session lock has no lease the client could count).
func (l *mysqlGetLockLocker) Valid(lease Lease) bool {
	if l.noValid {
		return true
	}
	s, ok := lease.Data.(*mysqlSession)
	if !ok || l.isClosed(s) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.OpTimeout)
	defer cancel()
	var held sql.NullInt64
	if err := s.conn.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?) = CONNECTION_ID()", l.name).Scan(&held); err != nil {
		l.drop(s)
		return false
	}
	return held.Valid && held.Int64 == 1 // NULL: nobody holds it
}

// Release unlocks on the session that took the lock. 0 (another session holds it) and NULL (no
// session does) are ErrNotHeld: the server dropped the lock when the session ended. So is a
// session the server closed (the driver sends nothing on a connection it finds closed: a KILL,
// a restart). Any other broken connection during the unlock leaves the outcome unknown; the
// connection is dropped, which ends the session and its lock anyway.
func (l *mysqlGetLockLocker) Release(ctx context.Context, lease Lease) error {
	s, ok := lease.Data.(*mysqlSession)
	if !ok || s == nil {
		return fmt.Errorf("mysql-get-lock: release of a lease it did not grant")
	}
	if l.isClosed(s) {
		// Closed by us after an error (Valid, a failed statement): a closed session holds no
		// lock, and no other session can hold it before the server sees the close.
		return nil
	}
	if err := l.cfg.Point(ctx, "release:before-unlock"); err != nil {
		return err
	}
	var got sql.NullInt64
	if err := s.conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", l.name).Scan(&got); err != nil {
		l.drop(s)
		var me *mysql.MySQLError
		if errors.Is(err, driver.ErrBadConn) || errors.As(err, &me) && me.Number == 1927 { // ER_CONNECTION_KILLED
			return fmt.Errorf("RELEASE_LOCK: %v: %w", err, ErrNotHeld)
		}
		return &UnknownError{Op: "RELEASE_LOCK", Err: err}
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("RELEASE_LOCK returned %v: %w", nullString(got), ErrNotHeld)
	}
	return nil
}

func nullString(v sql.NullInt64) string {
	if !v.Valid {
		return "NULL"
	}
	return fmt.Sprint(v.Int64)
}

func init() {
	Register(Info{
		Name:        "mysql-get-lock",
		ReferenceOn: []string{"mariadb"},
		Summary: "MariaDB/MySQL user-level lock: GET_LOCK(name, timeout) on a connection of its own, " +
			"RELEASE_LOCK to release; no TTL, Valid asks the server (IS_USED_LOCK = CONNECTION_ID()).",
		Source:     "MariaDB docs (GET_LOCK, RELEASE_LOCK, IS_USED_LOCK), go-sql-driver/mysql v1.10",
		Topologies: []string{topoMariaDB},
		Points:     []string{"acquire:after-lock", "release:before-unlock"},
		New:        newMysqlGetLock,
	})
}
