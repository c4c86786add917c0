package cluster

import (
	"testing"
	"time"
)

// TestPgBouncerCluster: clients reach pgbouncer (Addrs[0]) in transaction mode, so a session
// advisory lock taken through it is held by a pooled server session that another client's
// statements run in: the lock taken by client 1 is granted to client 2 too when client 2's
// statement lands in the same session — the flagship failure, seen here without the harness.
func TestPgBouncerCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: PostgresPgBouncer, Clients: 2, Proxies: true})
	ctx := ctxT(t, 60*time.Second)
	nodes := c.Nodes()
	if len(nodes) != 2 || nodes[0].Kind != KindPgBouncer || nodes[1].Kind != KindPostgres {
		t.Fatalf("Nodes = %+v, want pgbouncer-1 then pg-1", nodes)
	}
	if m, err := c.Master(ctx); err != nil || m != "pg-1" {
		t.Errorf("Master = %q, %v; want pg-1 (the server that holds the locks)", m, err)
	}
	var mode string
	admin := pgClient(t, ctx, nodes[1].Addr, 0)
	a := pgClient(t, ctx, c.Endpoints(1).Addrs[0], 1)
	b := pgClient(t, ctx, c.Endpoints(2).Addrs[0], 2)
	// Client 1 takes the lock; then client 2 asks, again and again: with 2 pooled sessions, one of
	// its statements lands in the session that holds the lock, and is granted.
	if _, err := a.Exec(ctx, "SELECT pg_advisory_lock(7)"); err != nil {
		t.Fatal(err)
	}
	granted := false
	for i := 0; i < 20 && !granted; i++ {
		if err := b.QueryRow(ctx, "SELECT pg_try_advisory_lock(7)").Scan(&granted); err != nil {
			t.Fatal(err)
		}
	}
	if !granted {
		t.Errorf("client 2 was never granted client 1's lock in 20 tries: is pgbouncer pooling transactions?")
	}
	if err := admin.QueryRow(ctx, "SHOW server_version").Scan(&mode); err != nil {
		t.Errorf("direct connection to the server: %v", err)
	}
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND application_name <> 'lockchaos-client-0'").Scan(&n); err != nil || n > PgBouncerPoolSize {
		t.Errorf("%d server sessions besides the harness's (%v), want at most the pool's %d", n, err, PgBouncerPoolSize)
	}
}
