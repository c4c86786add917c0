package algorithms

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"cirello.io/pglock"
	"github.com/lib/pq"
)

// pglockLocker is cirello.io/pglock as its README uses it: a *sql.DB of lib/pq (pglock.New
// accepts no other driver), pglock.New with WithLeaseDuration(TTL) and
// WithHeartbeatFrequency(TTL/3) — the README's 3 s and 1 s — the table made with its
// TryCreateTable, Acquire, and Close (the library's Release) when done.
//
// The lease is a row with a record version number (RVN) from a sequence, and no time in it:
// Acquire upserts the row, taking it when its RVN is the one this lock last saw (or there is
// none); a waiter that found another's RVN waits a whole lease on its own timer and tries again,
// and steals the row if the RVN did not change meanwhile ("Logic to avoid problems with clock
// skew", its README). The holder's heartbeat goroutine moves the RVN every TTL/3; the first
// heartbeat that fails (an error, or no answer within a lease) marks the lock released, which is
// all the holder is told: the careful holder's Valid is !lock.IsReleased(). The lease has no
// fixed validity (Validity 0: kept alive until released) and no fence (the RVN changes with each
// heartbeat, and the library offers none).
//
// The README's Acquire(name) runs the heartbeat on context.Background; here AcquireContext bounds
// the wait by the acquire's context and WithCustomHeartbeatContext gives the heartbeat the
// locker's own, ended by Close — the README's lifetime, which the acquire's context, cancelled
// when Acquire returns, would cut short: a lock taken with AcquireContext alone is lost when that
// context ends, its next heartbeat failing and marking it released (cirello-io/pglock #5, "I
// intended for it to work this way"); every holder would skip its write.
//
// The client dials through its proxy (pq.Connector.Dialer) and names itself (WithOwner, from the
// client's seeded source). The library times its waits with time.After, so the clock-skew fault
// (Config.Clock) cannot reach it, and it offers no hook between its steps: no points, and no
// attempt marks (a grant is placed within the whole Acquire call). An Acquire that fails other
// than by "not acquired" or a server's refusal may have stored the row: its outcome is unknown.
type pglockLocker struct {
	cfg  Config
	db   *sql.DB
	c    *pglock.Client
	life context.Context // the heartbeats', until Close
	stop context.CancelFunc

	mu       sync.Mutex
	made     chan struct{} // closed when the table was made, or failed to be (tableErr)
	tableErr error
}

func newPglock(cfg Config) (Locker, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Addrs) == 0 || cfg.MultiHost {
		return nil, fmt.Errorf("pglock: want one PostgreSQL address (lib/pq v1.10.9 takes one host), got %v", cfg.Addrs)
	}
	if cfg.SQL == nil {
		return nil, fmt.Errorf("pglock: %w", errNoLogin)
	}
	conn, err := pq.NewConnector(cfg.SQL.pgURL(cfg.Addrs[0], nil))
	if err != nil {
		return nil, fmt.Errorf("pglock: %w", err)
	}
	if cfg.Dial != nil {
		conn.Dialer(pqDialer(cfg.Dial))
	}
	db := sql.OpenDB(conn)
	c, err := pglock.New(db, pglock.WithLeaseDuration(cfg.TTL), pglock.WithHeartbeatFrequency(cfg.TTL/3),
		pglock.WithOwner(fmt.Sprintf("client-%d-%016x", cfg.Client, cfg.Rand.Uint64())))
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("pglock: %w", err)
	}
	l := &pglockLocker{cfg: cfg, db: db, c: c}
	l.life, l.stop = context.WithCancel(context.Background())
	return l, nil
}

// table waits, within ctx, for the lock table that the client makes once. TryCreateTable takes
// no context, so it runs on its own: a wait cut short by ctx leaves it running for the next.
func (l *pglockLocker) table(ctx context.Context) error {
	l.mu.Lock()
	if l.made == nil {
		l.made = make(chan struct{})
		go l.makeTable(l.made)
	}
	made := l.made
	l.mu.Unlock()
	select {
	case <-made:
	case <-ctx.Done():
		return fmt.Errorf("pglock create table: %w", ctx.Err())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.tableErr
	if err != nil && l.made == made {
		l.made = nil // the next Acquire tries again
	}
	return err
}

// makeTable is TryCreateTable. Clients starting together race on its CREATE ... IF NOT EXISTS (a
// duplicate of the table's type or of the sequence): the loser tries again, and then finds both.
func (l *pglockLocker) makeTable(made chan struct{}) {
	var err error
	for try := 0; try < 5; try++ {
		var pe *pq.Error
		if err = l.c.TryCreateTable(); err == nil || !errors.As(err, &pe) || (pe.Code != "23505" && pe.Code != "42P07") {
			break
		}
	}
	if err != nil {
		err = fmt.Errorf("pglock create table: %w", err)
	}
	l.mu.Lock()
	l.tableErr = err
	l.mu.Unlock()
	close(made)
}

// Acquire is AcquireContext until the row is ours or ctx ends.
func (l *pglockLocker) Acquire(ctx context.Context) (Lease, error) {
	if err := l.table(ctx); err != nil {
		return Lease{}, err
	}
	lock, err := l.c.AcquireContext(ctx, l.cfg.Name, pglock.WithCustomHeartbeatContext(l.life))
	var pe *pq.Error
	switch {
	case err == nil:
		return Lease{TTL: l.cfg.TTL, Data: lock}, nil
	case errors.Is(err, pglock.ErrNotAcquired) && ctx.Err() != nil:
		return Lease{}, fmt.Errorf("pglock: lock held by another: %w", ctx.Err())
	case errors.As(err, &pe):
		// The server refused a statement: its transaction did not commit.
		return Lease{}, fmt.Errorf("pglock acquire: %w", err)
	}
	return Lease{}, &UnknownError{Op: "pglock acquire", Err: err}
}

// Valid is what the library tells the holder: the lock is not marked released (by Release, or by
// a heartbeat that failed).
func (l *pglockLocker) Valid(lease Lease) bool {
	lock, ok := lease.Data.(*pglock.Lock)
	return ok && !lock.IsReleased()
}

// Release is lock.Close: the heartbeat stops, then the row is deleted if its RVN is still ours
// (ErrNotHeld when it is not: it was stolen, or a failed heartbeat lost it).
func (l *pglockLocker) Release(ctx context.Context, lease Lease) error {
	lock, ok := lease.Data.(*pglock.Lock)
	if !ok {
		return fmt.Errorf("pglock release: lease has no lock (Data %T)", lease.Data)
	}
	err := l.c.ReleaseContext(ctx, lock)
	var pe *pq.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pglock.ErrLockAlreadyReleased):
		return fmt.Errorf("pglock: %w", ErrNotHeld)
	case errors.As(err, &pe):
		return fmt.Errorf("pglock release: %w", err)
	}
	return &UnknownError{Op: "pglock release", Err: err}
}

// Close ends every heartbeat and the client's connections.
func (l *pglockLocker) Close() error {
	l.stop()
	return l.db.Close()
}

// pqDialer is lib/pq's Dialer over the client's dial function (its proxy).
type pqDialer func(ctx context.Context, network, addr string) (net.Conn, error)

func (d pqDialer) Dial(network, addr string) (net.Conn, error) {
	return d(context.Background(), network, addr)
}

func (d pqDialer) DialTimeout(network, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return d(ctx, network, addr)
}

func (d pqDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return d(ctx, network, addr)
}

func init() {
	Register(Info{
		Name: "pglock",
		Summary: "cirello.io/pglock: a lease row whose version a heartbeat moves every TTL/3; a waiter steals " +
			"it after a lease without a change; the holder checks lock.IsReleased() before it writes.",
		Source:     "cirello.io/pglock v1.16.1 (lib/pq v1.10.9)",
		Topologies: []string{topoPostgres, topoPostgresPgBouncer},
		New:        newPglock,
	})
}
