package cluster

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func mariadbClient(t *testing.T, ctx context.Context, addr string, client int) *sql.Conn {
	t.Helper()
	conn, done, err := mariadbOpen(ctx, addr, SQLLogin{User: MariaDBClientUser(client)})
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(done)
	return conn
}

func getLock(t *testing.T, ctx context.Context, conn *sql.Conn, timeout float64) sql.NullInt64 {
	t.Helper()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK('lc', ?)", timeout).Scan(&got); err != nil {
		t.Fatalf("GET_LOCK: %v", err)
	}
	return got
}

// TestMariaDBCluster starts one server, reaches it through a client's proxy under the client's
// own user name, ends that client's session from the server side, restarts the server, and
// leaves nothing behind (startCluster's cleanup: no process of the run, no run dir).
func TestMariaDBCluster(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	c := startCluster(t, Spec{Topology: MariaDB, Clients: 2, Proxies: true})
	if d := time.Since(t0); d > 3*time.Second {
		t.Logf("mariadb took %v to start (the budget is 3 s; a loaded machine?)", d)
	}
	ctx := ctxT(t, 60*time.Second)
	nodes := c.Nodes()
	if len(nodes) != 1 || nodes[0].Kind != KindMariaDB || nodes[0].Name != "mariadb-1" {
		t.Fatalf("Nodes = %+v", nodes)
	}
	if m, err := c.Master(ctx); err != nil || m != "mariadb-1" {
		t.Errorf("Master = %q, %v", m, err)
	}
	ep := c.Endpoints(1)
	if len(ep.Addrs) != 1 || ep.Addrs[0] == nodes[0].Addr {
		t.Fatalf("Endpoints(1).Addrs = %v, want one proxy address (server at %s)", ep.Addrs, nodes[0].Addr)
	}
	conn := mariadbClient(t, ctx, ep.Addrs[0], 1)
	var user string
	if err := conn.QueryRowContext(ctx, "SELECT USER()").Scan(&user); err != nil || user != "lockchaos-client-1@127.0.0.1" {
		t.Errorf("USER() = %q, %v; want the client's own name", user, err)
	}
	if got := getLock(t, ctx, conn, 1); got.Int64 != 1 {
		t.Fatalf("GET_LOCK = %v, want 1", got)
	}
	other := mariadbClient(t, ctx, c.Endpoints(2).Addrs[0], 2)
	if got := getLock(t, ctx, other, 0); !got.Valid || got.Int64 != 0 {
		t.Fatalf("client 2's GET_LOCK while client 1 holds = %v; want 0", got)
	}

	// session-kill: the server ends client 1's session, and with it the lock.
	n, err := c.KillSessions(ctx, 1)
	if err != nil || n != 1 {
		t.Fatalf("KillSessions(1) = %d, %v; want 1", n, err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err == nil {
		t.Errorf("client 1's session answers after KillSessions")
	}
	if got := getLock(t, ctx, other, 0); got.Int64 != 1 {
		t.Errorf("client 2's GET_LOCK after client 1's session ended = %v; want 1", got)
	}
	if n, err := c.KillSessions(ctx, 1); err != nil || n != 0 {
		t.Errorf("second KillSessions(1) = %d, %v; want 0 (none left)", n, err)
	}

	// Restart: a new mariadbd over the same data dir; sessions and locks are gone.
	t1 := time.Now()
	if err := c.Restart(ctx, "mariadb-1"); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart took %v", time.Since(t1).Round(time.Millisecond))
	again := mariadbClient(t, ctx, ep.Addrs[0], 1)
	if got := getLock(t, ctx, again, 0); got.Int64 != 1 {
		t.Errorf("GET_LOCK after restart = %v; want 1 (client 2's lock died with the server)", got)
	}
	addr := nodes[0].Addr
	c.Close() // startCluster's cleanup closes it again and checks no process of the run is left
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}
}

func TestMariaDBNodesAndBackends(t *testing.T) {
	if _, err := (Spec{Topology: MariaDB, Nodes: 2}).normalize(); !errors.Is(err, ErrBadSpec) {
		t.Errorf("mariadb with 2 nodes: %v, want ErrBadSpec", err)
	}
	if _, err := (Spec{Topology: MariaDB, Backend: Docker}).normalize(); err != nil {
		t.Errorf("mariadb on docker: %v, want it taken (lockchaos/mariadb)", err)
	}
	if !CanKillSessions(MariaDB) {
		t.Errorf("CanKillSessions(mariadb) = false")
	}
	old := mariadbdBin
	mariadbdBin = "/nonexistent/mariadbd"
	defer func() { mariadbdBin = old }()
	err := checkBinaries(MariaDB)
	if !errors.Is(err, ErrMissingBinary) || !strings.Contains(err.Error(), "apt-get install mariadb-server") {
		t.Errorf("missing mariadbd: %v, want ErrMissingBinary naming mariadb-server", err)
	}
}
