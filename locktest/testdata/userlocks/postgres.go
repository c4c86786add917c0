package userlocks

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/lockchaos/lockchaos/algorithms"
)

// PgAdvisoryLock is pg_advisory_lock(key) on a pgx connection of its own, pg_advisory_unlock
// to release. The server holds the lock while the session lives; the holder asks pg_locks
// whether its session still holds it (Valid). The NoValid twin never asks.
type PgAdvisoryLock struct {
	cc  *pgx.ConnConfig
	key int64
	op  time.Duration
	bug Bug

	mu   sync.Mutex
	conn *pgx.Conn
}

// NewPgAdvisoryLock builds the lock for one client from its login (cfg.SQL) and its proxy's
// address; on a primary with a standby (cfg.MultiHost) it lists both and keeps the writable one.
func NewPgAdvisoryLock(cfg algorithms.Config, bug Bug) (*PgAdvisoryLock, error) {
	if cfg.SQL == nil || len(cfg.Addrs) == 0 {
		return nil, errors.New("pg lock: needs a SQL login and an address")
	}
	q := url.Values{}
	if cfg.SQL.AppName != "" {
		q.Set("application_name", cfg.SQL.AppName)
	}
	if cfg.SQL.SSLMode != "" {
		q.Set("sslmode", cfg.SQL.SSLMode)
	}
	hosts := cfg.Addrs[:1]
	if cfg.MultiHost {
		hosts = cfg.Addrs
		q.Set("target_session_attrs", "read-write")
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(cfg.SQL.User, cfg.SQL.Password),
		Host: strings.Join(hosts, ","), Path: "/" + cfg.SQL.Database, RawQuery: q.Encode()}
	if cfg.SQL.Password == "" {
		u.User = url.User(cfg.SQL.User)
	}
	cc, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, err
	}
	op := opTimeout(cfg)
	cc.ConnectTimeout = max(op, time.Second)
	cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol // a pooler keeps no prepared statements
	if cfg.Dial != nil {
		cc.DialFunc = pgconn.DialFunc(cfg.Dial)
	}
	h := fnv.New32a()
	h.Write([]byte(cfg.Name))
	return &PgAdvisoryLock{cc: cc, key: int64(h.Sum32() >> 1), op: op, bug: bug}, nil
}

// drop closes conn: its session ends, and any lock it holds with it.
func (l *PgAdvisoryLock) drop(conn *pgx.Conn) {
	l.mu.Lock()
	if l.conn == conn {
		l.conn = nil
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = conn.Close(ctx)
}

// Close ends the session.
func (l *PgAdvisoryLock) Close() error {
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn != nil {
		l.drop(conn)
	}
	return nil
}

// Acquire waits in the server for the lock; any error drops the session (and a lock granted as
// the wait was cut short goes with it).
func (l *PgAdvisoryLock) Acquire(ctx context.Context) (algorithms.Lease, error) {
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn == nil || conn.IsClosed() {
		c, err := pgx.ConnectConfig(ctx, l.cc)
		if err != nil {
			return algorithms.Lease{}, fmt.Errorf("connect: %w", err)
		}
		l.mu.Lock()
		l.conn, conn = c, c
		l.mu.Unlock()
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", l.key); err != nil {
		l.drop(conn)
		var pe *pgconn.PgError
		if ctx.Err() != nil || errors.As(err, &pe) {
			return algorithms.Lease{}, fmt.Errorf("pg_advisory_lock: %w", err)
		}
		return algorithms.Lease{}, &algorithms.UnknownError{Op: "pg_advisory_lock", Err: err}
	}
	return algorithms.Lease{NoExpiry: true, Data: conn}, nil
}

// Valid asks the server whether this session still holds the lock.
func (l *PgAdvisoryLock) Valid(lease algorithms.Lease) bool {
	if l.bug == NoValid {
		return true
	}
	conn, ok := lease.Data.(*pgx.Conn)
	if !ok || conn.IsClosed() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.op)
	defer cancel()
	var held bool
	err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
		AND pid = pg_backend_pid() AND granted AND classid = 0 AND objid::bigint = $1 AND objsubid = 1)`, l.key).Scan(&held)
	if err != nil {
		l.drop(conn)
		return false
	}
	return held
}

// Release unlocks on the session that took the lock.
func (l *PgAdvisoryLock) Release(ctx context.Context, lease algorithms.Lease) error {
	conn, ok := lease.Data.(*pgx.Conn)
	if !ok {
		return errors.New("pg release: not our lease")
	}
	if conn.IsClosed() {
		return nil // a closed session holds nothing
	}
	var unlocked bool
	if err := conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", l.key).Scan(&unlocked); err != nil {
		l.drop(conn)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "57P01" { // terminated: the lock went with the session
			return fmt.Errorf("%v: %w", err, algorithms.ErrNotHeld)
		}
		return &algorithms.UnknownError{Op: "pg_advisory_unlock", Err: err}
	}
	if !unlocked {
		return algorithms.ErrNotHeld
	}
	return nil
}

// PgXactLock is the transaction-level advisory lock: BEGIN, pg_advisory_xact_lock(key), the
// transaction kept open while the lock is held, COMMIT to release. Through a transaction-mode
// pooler (postgres-pgbouncer) the open transaction pins its server session, where a session lock
// (PgAdvisoryLock) lands in whichever pooled session ran its statement.
type PgXactLock struct {
	*PgAdvisoryLock
}

type pgXactHeld struct {
	conn *pgx.Conn
	tx   pgx.Tx
}

// NewPgXactLock builds the lock for one client (as NewPgAdvisoryLock).
func NewPgXactLock(cfg algorithms.Config, bug Bug) (*PgXactLock, error) {
	l, err := NewPgAdvisoryLock(cfg, bug)
	if err != nil {
		return nil, err
	}
	return &PgXactLock{l}, nil
}

// Acquire begins a transaction and waits in it for the lock.
func (l *PgXactLock) Acquire(ctx context.Context) (algorithms.Lease, error) {
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn == nil || conn.IsClosed() {
		c, err := pgx.ConnectConfig(ctx, l.cc)
		if err != nil {
			return algorithms.Lease{}, fmt.Errorf("connect: %w", err)
		}
		l.mu.Lock()
		l.conn, conn = c, c
		l.mu.Unlock()
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		l.drop(conn)
		return algorithms.Lease{}, fmt.Errorf("BEGIN: %w", err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", l.key); err != nil {
		l.drop(conn) // the session's end rolls the transaction, and any lock it got, back
		var pe *pgconn.PgError
		if ctx.Err() != nil || errors.As(err, &pe) {
			return algorithms.Lease{}, fmt.Errorf("pg_advisory_xact_lock: %w", err)
		}
		return algorithms.Lease{}, &algorithms.UnknownError{Op: "pg_advisory_xact_lock", Err: err}
	}
	return algorithms.Lease{NoExpiry: true, Data: pgXactHeld{conn, tx}}, nil
}

// Valid asks the server, in the lock's transaction, whether its session holds the lock.
func (l *PgXactLock) Valid(lease algorithms.Lease) bool {
	if l.bug == NoValid {
		return true
	}
	h, ok := lease.Data.(pgXactHeld)
	if !ok || h.conn.IsClosed() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.op)
	defer cancel()
	var held bool
	err := h.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
		AND pid = pg_backend_pid() AND granted AND classid = 0 AND objid::bigint = $1 AND objsubid = 1)`, l.key).Scan(&held)
	if err != nil {
		l.drop(h.conn)
		return false
	}
	return held
}

// Release commits: the lock ends with the transaction (a failed COMMIT drops the session, whose
// end rolls it back: released either way).
func (l *PgXactLock) Release(ctx context.Context, lease algorithms.Lease) error {
	h, ok := lease.Data.(pgXactHeld)
	if !ok {
		return errors.New("pg release: not our lease")
	}
	if h.conn.IsClosed() {
		return nil
	}
	if err := h.tx.Commit(ctx); err != nil && !errors.Is(err, pgx.ErrTxCommitRollback) {
		l.drop(h.conn)
	}
	return nil
}
