// Package clustertest holds checks of a running cluster that the tests of more than one backend's
// package share (cluster's own for local, cluster/docker's), written against the public Cluster.
package clustertest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/internal/testkit"
)

// PgClient connects to the PostgreSQL server at addr as client (0: the harness), closed with the
// test.
func PgClient(t *testing.T, ctx context.Context, addr string, client int) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, cluster.PostgresURL(addr, cluster.ClientAppName(client)))
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Standby checks a running postgres-standby cluster (Spec.Clients 2, Proxies on) on any
// backend: a row committed on the primary (also after the primary restarted) reaches the
// standby, which refuses writes; a client's multi-host connection string (target_session_attrs=
// read-write, through its own proxies) lands on the primary. With the replication link cut, a row
// committed on the primary stays there; the cluster's failover fences the primary and promotes the
// standby, which has the first row, not the second, and no advisory lock; Master names it, and
// the client's next connection lands on it. Restarted, the promoted standby is still the primary.
func Standby(t *testing.T, c cluster.Cluster) {
	t.Helper()
	ctx := testkit.CtxT(t, 60*time.Second)
	nodes := c.Nodes()
	if len(nodes) != 2 || nodes[0].Name != "pg-1" || nodes[1].Name != "pg-2" || nodes[1].Kind != cluster.KindPostgres {
		t.Fatalf("Nodes = %+v, want pg-1 and pg-2", nodes)
	}
	if m, err := c.Master(ctx); err != nil || m != "pg-1" {
		t.Fatalf("Master = %q, %v; want pg-1", m, err)
	}
	ep := c.Endpoints(1)
	if !ep.MultiHost || len(ep.Addrs) != 2 || ep.Addrs[0] == nodes[0].Addr {
		t.Fatalf("Endpoints(1) = %+v, want MultiHost and one proxy per node", ep)
	}
	primary := PgClient(t, ctx, nodes[0].Addr, 0)
	standby := PgClient(t, ctx, nodes[1].Addr, 0)
	pgExec(t, ctx, primary, "CREATE TABLE t (v int)")
	waitRows(t, ctx, standby, 0)

	// A restart of the primary (the restart fault): a new postmaster over the same data, which
	// the standby streams from again. (The kill must wait for the old backends, the WAL sender
	// among them, to let go of the shared memory, or the new postmaster refuses to start.)
	if err := c.Restart(ctx, "pg-1"); err != nil {
		t.Fatalf("Restart(pg-1): %v", err)
	}
	primary = PgClient(t, ctx, nodes[0].Addr, 0)
	pgExec(t, ctx, primary, "INSERT INTO t VALUES (1)")
	waitRows(t, ctx, standby, 1)
	if _, err := standby.Exec(ctx, "INSERT INTO t VALUES (9)"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a write on the standby: %v, want a read-only transaction error", err)
	}
	if err := c.Failover(ctx, "pg-2"); err == nil {
		t.Errorf("Failover(pg-2), the standby: no error")
	}
	// Which server a client reached: its postmaster's start time (a promotion keeps it; the
	// ports are the same 5432 in both containers).
	primaryID, standbyID := serverID(t, ctx, primary), serverID(t, ctx, standby)

	client := multiHostClient(t, ctx, ep)
	if id := serverID(t, ctx, client); id != primaryID {
		t.Errorf("the multi-host client reached the server started at %s, want the primary (%s; the standby: %s)", id, primaryID, standbyID)
	}
	var got bool
	if err := client.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&got); err != nil || !got {
		t.Fatalf("pg_try_advisory_lock on the primary = %v, %v", got, err)
	}

	// The failover fault: replication cut, a row lands on the primary only, the primary fails over.
	repl, err := c.FaultReplicationLink()
	if err != nil {
		t.Fatal(err)
	}
	if err := repl.AddToxic(ctx, "cut", "timeout", "upstream", map[string]any{"timeout": 0}); err != nil {
		t.Fatal(err)
	}
	if err := repl.AddToxic(ctx, "cut-down", "timeout", "downstream", map[string]any{"timeout": 0}); err != nil {
		t.Fatal(err)
	}
	pgExec(t, ctx, primary, "INSERT INTO t VALUES (2)")
	t1 := time.Now()
	if err := c.Failover(ctx, "pg-1"); err != nil {
		t.Fatalf("Failover(pg-1): %v", err)
	}
	t.Logf("failover (fence pg-1, promote pg-2) took %v", time.Since(t1).Round(time.Millisecond))
	if m, err := c.Master(ctx); err != nil || m != "pg-2" {
		t.Fatalf("Master after the failover = %q, %v; want pg-2", m, err)
	}
	if conn, err := net.DialTimeout("tcp", nodes[0].Addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("the old primary %s still accepts connections after the failover", nodes[0].Addr)
	}
	if err := client.QueryRow(ctx, "SELECT 1").Scan(new(int)); err == nil {
		t.Errorf("the client's session on the old primary answers after the failover")
	}
	again := multiHostClient(t, ctx, ep)
	if id := serverID(t, ctx, again); id != standbyID {
		t.Errorf("after the failover the multi-host client reached the server started at %s, want the promoted standby (%s)", id, standbyID)
	}
	var vs []int32
	rows, err := again.Query(ctx, "SELECT v FROM t ORDER BY v")
	if err == nil {
		vs, err = pgx.CollectRows(rows, pgx.RowTo[int32])
	}
	if err != nil || fmt.Sprint(vs) != "[1]" {
		t.Errorf("rows on the promoted standby = %v, %v; want [1] (the row written with replication cut is lost)", vs, err)
	}
	if err := again.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&got); err != nil || !got {
		t.Errorf("pg_try_advisory_lock on the promoted standby = %v, %v; want true (advisory locks are not replicated)", got, err)
	}
	pgExec(t, ctx, again, "INSERT INTO t VALUES (3)")
	if n, err := c.(cluster.SessionKiller).KillSessions(ctx, 1); err != nil || n != 1 {
		t.Errorf("KillSessions(1) on the promoted standby = %d, %v; want 1", n, err)
	}

	// Restarted, the promoted standby comes back as the primary it became (a standby again would
	// refuse the write, and Master would name no node).
	if err := c.Restart(ctx, "pg-2"); err != nil {
		t.Fatalf("Restart(pg-2) after its promotion: %v", err)
	}
	if m, err := c.Master(ctx); err != nil || m != "pg-2" {
		t.Errorf("Master after the promoted standby's restart = %q, %v; want pg-2", m, err)
	}
	pgExec(t, ctx, PgClient(t, ctx, nodes[1].Addr, 0), "INSERT INTO t VALUES (4)")
}

func pgExec(t *testing.T, ctx context.Context, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// waitRows waits until the table t has n rows on conn's server.
func waitRows(t *testing.T, ctx context.Context, conn *pgx.Conn, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var got int
		err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&got)
		if err == nil && got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby has %d rows (%v) after 5 s, want %d", got, err, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// multiHostClient connects as client 1 does: every node through its proxy, the first that takes
// writes.
func multiHostClient(t *testing.T, ctx context.Context, ep cluster.Endpoints) *pgx.Conn {
	t.Helper()
	var hosts, ports []string
	for _, a := range ep.Addrs {
		h, p, _ := net.SplitHostPort(a)
		hosts, ports = append(hosts, h), append(ports, p)
	}
	dsn := fmt.Sprintf("host=%s port=%s user=%s dbname=postgres sslmode=disable connect_timeout=2 application_name=%s target_session_attrs=read-write",
		strings.Join(hosts, ","), strings.Join(ports, ","), cluster.PostgresUser, cluster.ClientAppName(1))
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("multi-host connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// serverID names the server conn is on by its postmaster's start time.
func serverID(t *testing.T, ctx context.Context, conn *pgx.Conn) string {
	t.Helper()
	var id string
	if err := conn.QueryRow(ctx, "SELECT pg_postmaster_start_time()::text").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}
