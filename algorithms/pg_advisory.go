package algorithms

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
)

const (
	topoPostgres          = "postgres"
	topoPostgresPgBouncer = "postgres-pgbouncer"
	topoPostgresStandby   = "postgres-standby"
)

// pgAdvisoryLocker is PostgreSQL's session-level advisory lock as the docs and most job runners
// (golang-migrate, Rails, cron fleets) use it: one connection of its own per client,
// SELECT pg_advisory_lock(key) to acquire (it waits in the server until the lock is free) and
// SELECT pg_advisory_unlock(key) to release.
//
// Lease: TTL 0 and Validity 0 (docs/design.md#session-locks-and-more-services). The server holds the lock for as long as the
// session lives, through any pause of the client, and drops it when the session ends (the client
// disconnects, an admin's pg_terminate_backend, a server restart, TCP keepalive giving up on a
// vanished client). The holder learns it only at its next statement: so the careful client's
// Valid asks the server whether its own session still holds the lock (pg_locks), and a broken
// connection means not valid. The pg-advisory-no-valid mutant trusts the lock without asking.
//
// Every session carries the application_name of the client's login (Config.SQL): the tag by
// which the session-kill fault finds a client's sessions on the server.
//
// Through a transaction-mode pooler (postgres-pgbouncer) none of this holds: the session that
// took the lock goes back to the pool after the statement, and the next statement — the unlock,
// the Valid query, or another client's lock — may run in any server session.
//
// pg-advisory-xact is the transaction-level variant: BEGIN, then pg_advisory_xact_lock(key),
// the transaction kept open while the lock is held, and COMMIT to release (the lock ends with the
// transaction; there is no unlock). Through a transaction pooler the open transaction pins its
// server session, so every statement of the holder runs where the lock is.
type pgAdvisoryLocker struct {
	cfg     Config
	key     int64
	noValid bool // the pg-advisory-no-valid mutant
	xact    bool // pg-advisory-xact

	pgSession
}

// pgSession is a PostgreSQL client's one connection, as the lockers of this file and pg_lease.go
// hold it.
type pgSession struct {
	mu   sync.Mutex
	conn *pgx.Conn // nil when there is none (never connected, or dropped after an error)
}

// Close ends the client's session.
func (s *pgSession) Close() error {
	s.mu.Lock()
	conn := s.conn
	s.conn = nil
	s.mu.Unlock()
	if conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return conn.Close(ctx)
}

// pgAdvisoryLease is the Lease.Data of pg-advisory: the connection the lock was taken on.
type pgAdvisoryLease struct {
	conn *pgx.Conn
	tx   pgx.Tx // pg-advisory-xact: the open transaction that holds the lock
}

// querier runs the lease's statements: in its transaction, if it has one.
func (d pgAdvisoryLease) querier() interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
} {
	if d.tx != nil {
		return d.tx
	}
	return d.conn
}

// pgLockKey maps a lock name to an advisory lock key: 31 bits of FNV-1a, so pg_locks shows it
// as classid 0, objid key.
func pgLockKey(name string) int64 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int64(h.Sum32() >> 1)
}

func newPgAdvisory(cfg Config) (Locker, error) { return newPgAdvisoryWith(cfg, false) }

func newPgAdvisoryXact(cfg Config) (Locker, error) {
	l, err := newPgAdvisoryWith(cfg, false)
	if err != nil {
		return nil, err
	}
	l.xact = true
	return l, nil
}

func newPgAdvisoryWith(cfg Config, noValid bool) (*pgAdvisoryLocker, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("pg-advisory: no address")
	}
	return &pgAdvisoryLocker{cfg: cfg, key: pgLockKey(cfg.Name), noValid: noValid}, nil
}

// pgConnConfig is the connection config of client cfg.Client to cfg.Addrs[0] (its proxy): no
// statement cache (a transaction pooler cannot keep prepared statements), no TLS, trust auth.
// With cfg.MultiHost (a primary and its standby) it lists every address, as a production client
// of a replicated PostgreSQL does (host=a,b port=p,q target_session_attrs=read-write): pgx tries
// them in order and keeps the first that accepts writes, so after a failover a new connection
// reaches the promoted standby. ConnectTimeout bounds each host's attempt.
func pgConnConfig(cfg Config) (*pgx.ConnConfig, error) {
	if cfg.SQL == nil {
		return nil, errNoLogin
	}
	addrs := cfg.Addrs[:1]
	extra := url.Values{}
	if cfg.MultiHost {
		addrs = cfg.Addrs
		extra.Set("target_session_attrs", "read-write")
	}
	dsn := cfg.SQL.pgURL(strings.Join(addrs, ","), extra)
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cc.ConnectTimeout = max(cfg.OpTimeout, time.Second)
	cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	if cfg.Dial != nil {
		cc.DialFunc = pgconn.DialFunc(cfg.Dial)
	}
	return cc, nil
}

func pgConnect(ctx context.Context, cfg Config) (*pgx.Conn, error) {
	cc, err := pgConnConfig(cfg)
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cc)
}

// session returns the client's connection, connecting when it has none.
func (l *pgAdvisoryLocker) session(ctx context.Context) (*pgx.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil && !l.conn.IsClosed() {
		return l.conn, nil
	}
	conn, err := pgConnect(ctx, l.cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	l.conn = conn
	return conn, nil
}

// drop closes conn (ending its session, and with it any lock it holds) and forgets it if it is
// still the client's connection.
func (s *pgSession) drop(conn *pgx.Conn) {
	s.mu.Lock()
	if s.conn == conn {
		s.conn = nil
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = conn.Close(ctx)
}

// Acquire waits in the server for the lock. Any error drops the connection: its session ends, so
// a lock granted just as the wait was cut short is released with it, and the next Acquire starts
// on a fresh session.
func (l *pgAdvisoryLocker) Acquire(ctx context.Context) (Lease, error) {
	conn, err := l.session(ctx)
	if err != nil {
		return Lease{}, err // nothing was asked
	}
	var tx pgx.Tx
	stmt := "SELECT pg_advisory_lock($1)"
	if l.xact {
		if tx, err = conn.Begin(ctx); err != nil {
			l.drop(conn)
			return Lease{}, fmt.Errorf("BEGIN: %w", err) // no lock is asked before BEGIN returns
		}
		stmt = "SELECT pg_advisory_xact_lock($1)"
	}
	MarkAttempt(ctx)
	if _, err := conn.Exec(ctx, stmt, l.key); err != nil {
		l.drop(conn)
		// The wait was cut short (pgx cancels the statement: 57014), or the server refused: not
		// granted, or granted at the last moment and released with the dropped session.
		if ctx.Err() != nil {
			return Lease{}, fmt.Errorf("pg_advisory_lock: %w (%v)", ctx.Err(), err)
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return Lease{}, fmt.Errorf("pg_advisory_lock: %w", err)
		}
		return Lease{}, &UnknownError{Op: "pg_advisory_lock", Err: err}
	}
	if err := l.cfg.Point(ctx, "acquire:after-lock"); err != nil {
		return Lease{}, &UnknownError{Op: "pg_advisory_lock", Err: err}
	}
	return Lease{NoExpiry: true, Data: pgAdvisoryLease{conn: conn, tx: tx}}, nil
}

// Valid asks the server whether this session still holds the lock. Unlike the other Validators
// it makes a request (bounded by OpTimeout): a session lock has no lease the client could count,
// so the server is the only one that knows (docs/design.md#session-locks-and-more-services).
func (l *pgAdvisoryLocker) Valid(lease Lease) bool {
	if l.noValid {
		return true
	}
	d, ok := lease.Data.(pgAdvisoryLease)
	if !ok || d.conn == nil || d.conn.IsClosed() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.OpTimeout)
	defer cancel()
	var held bool
	err := d.querier().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
		AND pid = pg_backend_pid() AND granted AND classid = 0 AND objid::bigint = $1 AND objsubid = 1)`,
		l.key).Scan(&held)
	if err != nil {
		l.drop(d.conn)
		return false
	}
	return held
}

// Release unlocks on the session that took the lock. false from pg_advisory_unlock (the session
// does not hold it) and a session the server terminated are ErrNotHeld: the server dropped the
// lock when the session ended. A broken connection during the unlock leaves the outcome unknown;
// the connection is dropped, which ends the session and its lock anyway.
func (l *pgAdvisoryLocker) Release(ctx context.Context, lease Lease) error {
	d, ok := lease.Data.(pgAdvisoryLease)
	if !ok || d.conn == nil {
		return fmt.Errorf("pg-advisory: release of a lease it did not grant")
	}
	if d.conn.IsClosed() {
		// Closed by us after an error (Valid, a failed statement): a closed session holds no
		// lock. The server frees it when it sees the session end (at once, or when a partition
		// delivers the close), and no other session can hold it before: the release is done.
		return nil
	}
	if err := l.cfg.Point(ctx, "release:before-unlock"); err != nil {
		return err
	}
	if d.tx != nil {
		// COMMIT ends the transaction and its lock. A transaction that failed commits as a
		// rollback, which ends it all the same; a COMMIT that fails otherwise drops the
		// connection, and the session's end rolls the transaction back: released either way.
		if err := d.tx.Commit(ctx); err != nil && !errors.Is(err, pgx.ErrTxCommitRollback) {
			l.drop(d.conn)
		}
		return nil
	}
	var unlocked bool
	if err := d.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", l.key).Scan(&unlocked); err != nil {
		l.drop(d.conn)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "57P01" { // admin_shutdown: the session was terminated
			return fmt.Errorf("pg_advisory_unlock: %v: %w", err, ErrNotHeld)
		}
		return &UnknownError{Op: "pg_advisory_unlock", Err: err}
	}
	if !unlocked {
		return fmt.Errorf("pg_advisory_unlock returned false: %w", ErrNotHeld)
	}
	return nil
}

func init() {
	Register(Info{
		Name:        "pg-advisory",
		ReferenceOn: []string{"postgres", "postgres-standby"},
		Summary: "PostgreSQL session advisory lock: pg_advisory_lock(key) on a connection of its own, " +
			"pg_advisory_unlock to release; no TTL, Valid asks the server (pg_locks).",
		Source:     "PostgreSQL docs §9.27.10 (advisory lock functions), jackc/pgx v5",
		Topologies: []string{topoPostgres, topoPostgresPgBouncer, topoPostgresStandby},
		Points:     []string{"acquire:after-lock", "release:before-unlock"},
		New:        newPgAdvisory,
	})
	Register(Info{
		Name: "pg-advisory-xact",
		// The lock that is correct through transaction pooling: the open transaction pins its
		// pooled server session (a session lock there is granted to whoever lands in it).
		ReferenceOn: []string{"postgres-pgbouncer"},
		Summary: "PostgreSQL transaction advisory lock: BEGIN; pg_advisory_xact_lock(key), the transaction " +
			"open while held; COMMIT to release; no TTL, Valid asks the server in the transaction.",
		Source:     "PostgreSQL docs §9.27.10 (advisory lock functions), jackc/pgx v5",
		Topologies: []string{topoPostgres, topoPostgresPgBouncer, topoPostgresStandby},
		Points:     []string{"acquire:after-lock", "release:before-unlock"},
		New:        newPgAdvisoryXact,
	})
}
