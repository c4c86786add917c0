package algorithms

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgLeaseLocker is a lease row in a PostgreSQL table, timed by the server's clock (now()), as
// job schedulers and "leader election in a table" posts build it:
//
//	INSERT INTO lockchaos_leases (name, owner, expires, version) VALUES (..., now() + ttl, 1)
//	ON CONFLICT (name) DO UPDATE SET owner = ..., expires = now() + ttl, version = version + 1
//	  WHERE lockchaos_leases.expires <= now()
//	RETURNING version
//
// A row comes back only when the lease was free or had expired by the server's clock; the
// version it returns is the fence (Info.Fenced): every grant increments it, and release keeps the
// row (it sets expires to -infinity, owner and version checked), so versions only grow, also
// across a server restart (the row is committed, fsync on). Validity is the TTL, counted from the
// call by the client's clock (the server's lease starts later, at its now()). No session matters:
// any connection, pooled or not, may run each statement.
type pgLeaseLocker struct {
	cfg   Config
	owner string

	pgSession
	tabled bool // the table exists on the server of the current connection
}

type pgLeaseData struct {
	owner   string
	version int64
}

func newPgLease(cfg Config) (Locker, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("pg-lease: no address")
	}
	return &pgLeaseLocker{cfg: cfg, owner: fmt.Sprintf("client-%d-%016x", cfg.Client, cfg.Rand.Uint64())}, nil
}

// session returns the client's connection (and makes the table once), connecting when needed.
func (l *pgLeaseLocker) session(ctx context.Context) (*pgx.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil || l.conn.IsClosed() {
		conn, err := pgConnect(ctx, l.cfg)
		if err != nil {
			return nil, fmt.Errorf("connect: %w", err)
		}
		l.conn = conn
		// A new connection may reach another server: on postgres-standby, the standby promoted
		// after a failover, which may lack the table (the failover fault cuts replication before
		// any client made it; in production a migration made it long before, and it would be
		// there, empty of the lost rows: the state CREATE TABLE IF NOT EXISTS leaves).
		l.tabled = !l.cfg.MultiHost && l.tabled
	}
	if !l.tabled {
		_, err := l.conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS lockchaos_leases (
			name text PRIMARY KEY, owner text NOT NULL, expires timestamptz NOT NULL, version bigint NOT NULL)`)
		var pe *pgconn.PgError
		// Two clients creating it at once: one of them sees a duplicate of the type or table.
		if err != nil && !(errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07")) {
			return nil, fmt.Errorf("create table: %w", err)
		}
		l.tabled = true
	}
	return l.conn, nil
}

// Acquire tries the upsert until a row comes back, RetryDelay apart.
func (l *pgLeaseLocker) Acquire(ctx context.Context) (Lease, error) {
	ttlMs := l.cfg.TTL.Milliseconds()
	for {
		conn, err := l.session(ctx)
		if err != nil {
			return Lease{}, err
		}
		MarkAttempt(ctx)
		octx, cancel := context.WithTimeout(ctx, max(l.cfg.OpTimeout, 200*time.Millisecond))
		var version int64
		err = conn.QueryRow(octx, `INSERT INTO lockchaos_leases AS l (name, owner, expires, version)
			VALUES ($1, $2, now() + $3::bigint * interval '1 millisecond', 1)
			ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires = EXCLUDED.expires, version = l.version + 1
			WHERE l.expires <= now()
			RETURNING version`, l.cfg.Name, l.owner, ttlMs).Scan(&version)
		cancel()
		switch {
		case err == nil:
			if err := l.cfg.Point(ctx, "acquire:after-upsert"); err != nil {
				return Lease{}, &UnknownError{Op: "lease upsert", Err: err}
			}
			return Lease{Fence: uint64(version), Validity: l.cfg.TTL, TTL: l.cfg.TTL,
				Data: pgLeaseData{owner: l.owner, version: version}}, nil
		case errors.Is(err, pgx.ErrNoRows):
			// Held by another, unexpired: wait and try again.
		default:
			l.drop(conn)
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				return Lease{}, fmt.Errorf("lease upsert: %w", err)
			}
			return Lease{}, &UnknownError{Op: "lease upsert", Err: err}
		}
		t := time.NewTimer(l.cfg.RetryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return Lease{}, fmt.Errorf("lease held by another: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// Release ends the lease if it is still ours (owner and version): expires = -infinity, the row
// and its version kept for the next grant's fence.
func (l *pgLeaseLocker) Release(ctx context.Context, lease Lease) error {
	d, ok := lease.Data.(pgLeaseData)
	if !ok {
		return errors.New("pg-lease: release of a lease it did not grant")
	}
	conn, err := l.session(ctx)
	if err != nil {
		return err
	}
	if err := l.cfg.Point(ctx, "release:before-update"); err != nil {
		return err
	}
	tag, err := conn.Exec(ctx, `UPDATE lockchaos_leases SET expires = '-infinity'
		WHERE name = $1 AND owner = $2 AND version = $3`, l.cfg.Name, d.owner, d.version)
	if err != nil {
		l.drop(conn)
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return fmt.Errorf("lease release: %w", err)
		}
		return &UnknownError{Op: "lease release", Err: err}
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("lease taken over (version %d no longer ours): %w", d.version, ErrNotHeld)
	}
	return nil
}

func init() {
	Register(Info{
		Name: "pg-lease",
		Summary: "A lease row in PostgreSQL: INSERT ... ON CONFLICT DO UPDATE WHERE expired, timed by the " +
			"server's now(); fence = the row's version, release by owner and version.",
		Source:     "lease tables of job schedulers; PostgreSQL INSERT ... ON CONFLICT; jackc/pgx v5",
		Topologies: []string{topoPostgres, topoPostgresPgBouncer, topoPostgresStandby},
		Points:     []string{"acquire:after-upsert", "release:before-update"},
		Fenced:     true,
		New:        newPgLease,
	})
}
