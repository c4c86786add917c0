package cluster

import (
	"errors"
	"testing"
	"time"
)

// TestSessionIdleTimeout: with Spec.SessionIdleTimeout a SQL server ends a session that sent
// nothing for that long, and its session lock with it (another client takes it); a session that
// keeps talking lives on. A topology without sessions refuses the setting.
func TestSessionIdleTimeout(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		c := startCluster(t, Spec{Topology: Postgres, Clients: 2, Proxies: true, SessionIdleTimeout: time.Second})
		ctx := ctxT(t, 30*time.Second)
		idle := pgClient(t, ctx, c.Endpoints(1).Addrs[0], 1)
		busy := pgClient(t, ctx, c.Endpoints(2).Addrs[0], 2)
		if _, err := idle.Exec(ctx, "SELECT pg_advisory_lock(7)"); err != nil {
			t.Fatal(err)
		}
		// 2.5 s: the busy session speaks every 100 ms (a gap of a whole second, on a loaded machine
		// under -race, is not to be feared), the idle one not at all.
		for range 25 {
			time.Sleep(100 * time.Millisecond)
			var got bool
			if err := busy.QueryRow(ctx, "SELECT pg_try_advisory_lock(8)").Scan(&got); err != nil {
				t.Fatalf("the busy session was ended: %v", err)
			}
		}
		var got bool
		if err := busy.QueryRow(ctx, "SELECT pg_try_advisory_lock(7)").Scan(&got); err != nil || !got {
			t.Errorf("the idle holder's lock after 2.5 s: try_lock = %v, %v; want it freed with the ended session", got, err)
		}
		if _, err := idle.Exec(ctx, "SELECT 1"); err == nil {
			t.Errorf("the idle session still answers after 2.5 s (timeout 1 s)")
		}
	})
	t.Run("mariadb", func(t *testing.T) {
		t.Parallel()
		c := startCluster(t, Spec{Topology: MariaDB, Clients: 2, Proxies: true, SessionIdleTimeout: time.Second})
		ctx := ctxT(t, 30*time.Second)
		idle := mariadbClient(t, ctx, c.Endpoints(1).Addrs[0], 1)
		if got := getLock(t, ctx, idle, 1); got.Int64 != 1 {
			t.Fatalf("GET_LOCK = %v, want 1", got)
		}
		time.Sleep(2500 * time.Millisecond) // wait_timeout is whole seconds, checked about once a second
		other := mariadbClient(t, ctx, c.Endpoints(2).Addrs[0], 2)
		if got := getLock(t, ctx, other, 1); got.Int64 != 1 {
			t.Errorf("client 2's GET_LOCK after the holder idled 2.5 s = %v; want 1 (wait_timeout=1 ended its session)", got)
		}
	})
	t.Run("refused without sessions", func(t *testing.T) {
		_, err := Spec{Topology: RedisSingle, SessionIdleTimeout: time.Second}.normalize()
		if !errors.Is(err, ErrBadSpec) {
			t.Errorf("redis-single with an idle timeout: %v, want ErrBadSpec", err)
		}
	})
}
