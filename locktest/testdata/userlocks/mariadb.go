package userlocks

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
	"github.com/lockchaos/lockchaos/algorithms"
)

// GetLock is MariaDB's GET_LOCK(name, timeout) on a connection of its own, RELEASE_LOCK to
// release. The holder asks IS_USED_LOCK(name) = CONNECTION_ID() whether its session still holds
// it (Valid); the NoValid twin never asks.
type GetLock struct {
	db   *sql.DB
	name string
	op   time.Duration
	bug  Bug

	mu   sync.Mutex
	conn *sql.Conn
}

// NewGetLock builds the lock for one client from its login (cfg.SQL) and its proxy's address.
func NewGetLock(cfg algorithms.Config, bug Bug) (*GetLock, error) {
	if cfg.SQL == nil || len(cfg.Addrs) == 0 {
		return nil, errors.New("GET_LOCK: needs a SQL login and an address")
	}
	op := opTimeout(cfg)
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.DBName, mc.Net, mc.Addr = cfg.SQL.User, cfg.SQL.Password, cfg.SQL.Database, "tcp", cfg.Addrs[0]
	mc.Timeout = max(op, time.Second)
	mc.InterpolateParams = true
	mc.Logger = &mysql.NopLogger{}
	if cfg.Dial != nil {
		mc.DialFunc = cfg.Dial
	}
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxIdleConns(0) // a session given back ends, and its locks with it
	name := cfg.Name
	if len(name) > 64 { // MariaDB's limit for a lock's name
		h := fnv.New64a()
		h.Write([]byte(name))
		name = fmt.Sprintf("%s-%016x", name[:47], h.Sum64())
	}
	return &GetLock{db: db, name: name, op: op, bug: bug}, nil
}

// drop ends the session.
func (l *GetLock) drop(c *sql.Conn) {
	l.mu.Lock()
	if l.conn == c {
		l.conn = nil
	}
	l.mu.Unlock()
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close()
}

// Close ends the session and the pool.
func (l *GetLock) Close() error {
	l.mu.Lock()
	c := l.conn
	l.mu.Unlock()
	if c != nil {
		l.drop(c)
	}
	return l.db.Close()
}

// Acquire waits in the server, GET_LOCK's timeout being the time left of ctx.
func (l *GetLock) Acquire(ctx context.Context) (algorithms.Lease, error) {
	l.mu.Lock()
	c := l.conn
	l.mu.Unlock()
	if c == nil {
		var err error
		if c, err = l.db.Conn(ctx); err != nil {
			return algorithms.Lease{}, fmt.Errorf("connect: %w", err)
		}
		l.mu.Lock()
		l.conn = c
		l.mu.Unlock()
	}
	for {
		wait := time.Second
		if dl, ok := ctx.Deadline(); ok {
			wait = max(time.Until(dl)-50*time.Millisecond, 0)
		}
		var got sql.NullInt64
		if err := c.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", l.name, wait.Seconds()).Scan(&got); err != nil {
			l.drop(c)
			var me *mysql.MySQLError
			if ctx.Err() != nil || errors.As(err, &me) || errors.Is(err, driver.ErrBadConn) {
				return algorithms.Lease{}, fmt.Errorf("GET_LOCK: %w", err)
			}
			return algorithms.Lease{}, &algorithms.UnknownError{Op: "GET_LOCK", Err: err}
		}
		switch {
		case !got.Valid:
			l.drop(c)
			return algorithms.Lease{}, errors.New("GET_LOCK returned NULL")
		case got.Int64 == 1:
			return algorithms.Lease{NoExpiry: true, Data: c}, nil
		case ctx.Err() != nil:
			return algorithms.Lease{}, ctx.Err()
		}
		if _, ok := ctx.Deadline(); ok {
			return algorithms.Lease{}, context.DeadlineExceeded
		}
	}
}

// Valid asks the server whether this session still holds the lock.
func (l *GetLock) Valid(lease algorithms.Lease) bool {
	if l.bug == NoValid {
		return true
	}
	c, ok := lease.Data.(*sql.Conn)
	l.mu.Lock()
	ours := ok && l.conn == c
	l.mu.Unlock()
	if !ours {
		return false // dropped since
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.op)
	defer cancel()
	var held sql.NullInt64
	if err := c.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?) = CONNECTION_ID()", l.name).Scan(&held); err != nil {
		l.drop(c)
		return false
	}
	return held.Valid && held.Int64 == 1
}

// Release unlocks on the session that took the lock.
func (l *GetLock) Release(ctx context.Context, lease algorithms.Lease) error {
	c, ok := lease.Data.(*sql.Conn)
	if !ok {
		return errors.New("GET_LOCK release: not our lease")
	}
	l.mu.Lock()
	ours := l.conn == c
	l.mu.Unlock()
	if !ours {
		return nil // dropped: a closed session holds nothing
	}
	var got sql.NullInt64
	if err := c.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", l.name).Scan(&got); err != nil {
		l.drop(c)
		var me *mysql.MySQLError
		if errors.Is(err, driver.ErrBadConn) || errors.As(err, &me) && me.Number == 1927 {
			return fmt.Errorf("RELEASE_LOCK: %v: %w", err, algorithms.ErrNotHeld)
		}
		return &algorithms.UnknownError{Op: "RELEASE_LOCK", Err: err}
	}
	if !got.Valid || got.Int64 != 1 {
		return algorithms.ErrNotHeld
	}
	return nil
}
