package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func pgClient(t *testing.T, ctx context.Context, addr string, client int) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, PostgresURL(addr, ClientAppName(client)))
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestPostgresCluster starts one server, reaches it through a client's proxy, ends that client's
// session from the server side, restarts it, and leaves nothing behind (startCluster's cleanup).
func TestPostgresCluster(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	c := startCluster(t, Spec{Topology: Postgres, Clients: 2, Proxies: true})
	if d := time.Since(t0); d > 3*time.Second {
		t.Logf("postgres took %v to start (the budget is 3 s; a loaded machine?)", d)
	}
	ctx := ctxT(t, 60*time.Second)
	nodes := c.Nodes()
	if len(nodes) != 1 || nodes[0].Kind != KindPostgres || nodes[0].Name != "pg-1" {
		t.Fatalf("Nodes = %+v", nodes)
	}
	ep := c.Endpoints(1)
	if len(ep.Addrs) != 1 || ep.Addrs[0] == nodes[0].Addr {
		t.Fatalf("Endpoints(1).Addrs = %v, want one proxy address (server at %s)", ep.Addrs, nodes[0].Addr)
	}
	if _, err := c.Link(1, "pg-1"); err != nil {
		t.Errorf("Link(1, pg-1): %v", err)
	}
	conn := pgClient(t, ctx, ep.Addrs[0], 1)
	var fsync string
	if err := conn.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil || fsync != "on" {
		t.Errorf("SHOW fsync = %q, %v; want on (the server's default)", fsync, err)
	}
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_advisory_lock(42) IS NOT NULL").Scan(&got); err != nil || !got {
		t.Fatalf("pg_advisory_lock: %v, %v", got, err)
	}
	other := pgClient(t, ctx, c.Endpoints(2).Addrs[0], 2)
	if err := other.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&got); err != nil || got {
		t.Fatalf("client 2's pg_try_advisory_lock while client 1 holds = %v, %v; want false", got, err)
	}

	// session-kill: the server ends client 1's session, and with it the lock.
	n, err := c.KillSessions(ctx, 1)
	if err != nil || n != 1 {
		t.Fatalf("KillSessions(1) = %d, %v; want 1", n, err)
	}
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(new(int)); err == nil {
		t.Errorf("client 1's session answers after KillSessions")
	}
	if err := other.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&got); err != nil || !got {
		t.Errorf("client 2's pg_try_advisory_lock after client 1's session ended = %v, %v; want true", got, err)
	}
	if n, err := c.KillSessions(ctx, 1); err != nil || n != 0 {
		t.Errorf("second KillSessions(1) = %d, %v; want 0 (none left)", n, err)
	}

	// Restart: a new postmaster over the same data dir; sessions and locks are gone.
	if err := c.Restart(ctx, "pg-1"); err != nil {
		t.Fatal(err)
	}
	again := pgClient(t, ctx, ep.Addrs[0], 1)
	if err := again.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&got); err != nil || !got {
		t.Errorf("pg_try_advisory_lock after restart = %v, %v; want true", got, err)
	}
	var backend int
	if err := again.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatal(err)
	}
	addr := nodes[0].Addr
	c.Close()
	// A backend leaves the postmaster's process group (setsid): Close must kill it too.
	// (Its parent is gone, so init reaps it: give that a moment.)
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", backend))
		if err != nil || strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("backend %d survives Close: %s", backend, b)
			break
		}
	} // startCluster's cleanup closes it again and checks the run dir is gone
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}
}

func TestPostgresNodesAndBackends(t *testing.T) {
	if _, err := (Spec{Topology: Postgres, Nodes: 2}).normalize(); !errors.Is(err, ErrBadSpec) {
		t.Errorf("postgres with 2 nodes: %v, want ErrBadSpec", err)
	}
	if _, err := (Spec{Topology: Postgres, Backend: Docker}).normalize(); err != nil {
		t.Errorf("postgres on docker: %v, want it taken (lockchaos/postgres)", err)
	}
	if _, err := (Spec{Topology: PostgresPgBouncer, Backend: Docker}).normalize(); err != nil {
		t.Errorf("postgres-pgbouncer on docker: %v, want it taken (lockchaos/postgres, lockchaos/pgbouncer)", err)
	}
	if !CanKillSessions(Postgres) || CanKillSessions(RedisSingle) {
		t.Errorf("CanKillSessions: postgres %v, redis-single %v", CanKillSessions(Postgres), CanKillSessions(RedisSingle))
	}
}
