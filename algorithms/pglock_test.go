package algorithms_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

// TestPglock: cirello.io/pglock as its README uses it, against a real PostgreSQL.
func TestPglock(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.Postgres, Clients: 3, Proxies: true})
	ctx := context.Background()
	db := pgDirect(t, c)
	// rvn is the lock row's record version number, which only its holder's heartbeat moves.
	rvn := func(t *testing.T, name string) int64 {
		t.Helper()
		var v int64
		if err := db.QueryRow(ctx, `SELECT record_version_number FROM locks WHERE name = $1`, name).Scan(&v); err != nil {
			t.Fatalf("the row of %s: %v", name, err)
		}
		return v
	}

	t.Run("handover", func(t *testing.T) {
		const ttl = 600 * time.Millisecond
		a := newLocker(t, c, "pglock", 1, "handover", opts{ttl: ttl})
		b := newLocker(t, c, "pglock", 2, "handover", opts{ttl: ttl})
		libHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
			if l.Validity != 0 || l.TTL != ttl || l.Fence != 0 {
				t.Errorf("lease %+v, want Validity 0 (kept alive until released), TTL %v, no fence", l, ttl)
			}
			if !a.(algorithms.Validator).Valid(l) {
				t.Error("Valid (not IsReleased) false for a fresh lock")
			}
		})
	})

	// The heartbeat moves the row's version every TTL/3, so a waiter that watches it for leases
	// on end never steals it, and the holder stays valid.
	t.Run("heartbeat", func(t *testing.T) {
		const ttl = time.Second // a heartbeat late by 2/3 of it under load would lose the lock
		a := newLocker(t, c, "pglock", 1, "heartbeat", opts{ttl: ttl})
		b := newLocker(t, c, "pglock", 2, "heartbeat", opts{ttl: ttl})
		la := acquire(t, a, 5*time.Second)
		v0 := rvn(t, "heartbeat")
		if lb, err := tryFor(b, 3*ttl); err == nil {
			t.Fatalf("B stole a lock whose heartbeat runs: %+v", lb)
		}
		if v1 := rvn(t, "heartbeat"); v1 == v0 {
			t.Errorf("the row's version stayed %d through %v of heartbeats", v0, 3*ttl)
		}
		if !a.(algorithms.Validator).Valid(la) {
			t.Error("Valid false while the heartbeat runs")
		}
		if err := a.Release(ctx, la); err != nil {
			t.Errorf("Release: %v", err)
		}
	})

	// Another client's version in the row (a waiter that stole it): the holder's next heartbeat
	// fails, which is how it learns — Valid turns false within a heartbeat, Release is ErrNotHeld.
	t.Run("stolen", func(t *testing.T) {
		const ttl = 600 * time.Millisecond
		a := newLocker(t, c, "pglock", 1, "stolen", opts{ttl: ttl})
		la := acquire(t, a, 5*time.Second)
		if _, err := db.Exec(ctx, `UPDATE locks SET record_version_number = nextval('locks_rvn'), owner = 'thief' WHERE name = 'stolen'`); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(ttl)
		for a.(algorithms.Validator).Valid(la) {
			if time.Now().After(deadline) {
				t.Fatalf("Valid still true %v after the row was taken", ttl)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := a.Release(ctx, la); !errors.Is(err, algorithms.ErrNotHeld) {
			t.Errorf("Release of a stolen lock: %v, want ErrNotHeld", err)
		}
	})

	// A client that goes away holding the lock (Close, no release): its heartbeats stop, and a
	// waiter steals the row once it saw the same version a lease apart.
	t.Run("abandoned", func(t *testing.T) {
		const ttl = 600 * time.Millisecond
		a := newLocker(t, c, "pglock", 1, "abandoned", opts{ttl: ttl})
		b := newLocker(t, c, "pglock", 2, "abandoned", opts{ttl: ttl})
		acquire(t, a, 5*time.Second)
		if err := a.(algorithms.Closer).Close(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		lb := acquire(t, b, 5*ttl)
		if d := time.Since(start); d < ttl {
			t.Errorf("B took the abandoned lock after %v, less than a lease", d)
		}
		if err := b.Release(ctx, lb); err != nil {
			t.Errorf("B Release: %v", err)
		}
	})
}

// pgDirect is a connection of the test's own to data node 0 (no proxy), to look at the server.
func pgDirect(t *testing.T, c cluster.Cluster) *pgx.Conn {
	t.Helper()
	host, port, err := net.SplitHostPort(c.Nodes()[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable", host, port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}
