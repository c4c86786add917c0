package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// PostgresStandby is a PostgreSQL primary and one streaming standby (docs/design.md#session-locks-and-more-services): pg-1 starts
// as the primary (initdb per run), pg-2 as its hot standby, made by pg_basebackup and streaming
// asynchronously (PostgreSQL's default) through the replication link, a proxy the failover fault
// cuts. Advisory locks live in the primary's memory and are never replicated; rows are, when the
// link carries them. Clients list both nodes and connect to whichever accepts writes
// (Endpoints.MultiHost: libpq's target_session_attrs=read-write), as a production client of a
// primary with a standby does.
//
//	clients ──▶ pg-1 (primary) ──▶ proxy(replication) ──▶ pg-2 (standby, read-only)
const PostgresStandby = "postgres-standby"

func init() {
	registerTopology(PostgresStandby, topology{
		family: "sql", clients: KindPostgres,
		nodes: func(n int) (int, error) {
			if n != 0 && n != 2 {
				return n, fmt.Errorf("postgres-standby with %d nodes (it is a primary and one standby: leave nodes at 0)", n)
			}
			return 2, nil
		},
		needs:        func() []Requirement { return pgBinRequirements("initdb", "postgres", "pg_basebackup") },
		containers:   []Kind{KindPostgres},
		start:        (*topo).startPostgresStandby,
		leader:       (*topo).pgPrimary,
		replication:  func(c *topo, _ context.Context) (string, error) { return c.replMaster, nil },
		failover:     (*topo).pgFailover,
		killSessions: pgKillSessions,
		idleTimeout:  true, // both servers run newPgNode's flags, the idle timeouts among them
		sql:          KindPostgres,
		endpoints:    func(_ *topo, e *Endpoints) { e.MultiHost = true },
	})
}

// startPostgresStandby starts pg-1, then copies it to pg-2 with pg_basebackup through the
// replication proxy and starts pg-2 as a hot standby streaming from pg-1 through that proxy. It
// returns once the standby streams, so a row committed on the primary reaches the standby from
// the first moment of a run (until a fault cuts the link). initdb is most of the start (≈1.3 s of
// ≈2 s here); the base backup of a fresh cluster takes ≈0.2 s.
func (c *topo) startPostgresStandby(ctx context.Context) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	primary, err := c.newPostgresNode("pg-1", ports[0])
	if err != nil {
		return err
	}
	c.add(primary)
	if err := c.launchAll(ctx, []*node{primary}); err != nil {
		return err
	}
	if err := pgAllowReplication(ctx, primary.Addr); err != nil {
		return fmt.Errorf("let %s's standby in: %w", primary.Name, err)
	}
	listen, err := c.be.replicationListen()
	if err != nil {
		return err
	}
	repl, err := c.px.addOn(linkKey{0, primary.Name}, listen, primary.Addr)
	if err != nil {
		return err
	}
	c.replMaster = primary.Name
	host, port, _ := net.SplitHostPort(repl)
	conninfo := fmt.Sprintf("host=%s port=%s user=%s application_name=pg-2 connect_timeout=2", host, port, PostgresUser)
	backup := func(dir string, cred *syscall.Credential) error { return pgBaseBackup(dir, cred, host, port) }
	standby, err := c.newPgNode("pg-2", ports[1], backup,
		"-c", "hot_standby=on",
		"-c", "primary_conninfo="+conninfo,
		// The walreceiver retries a lost primary every 5 s by default; a standby started before
		// its link answers (or healed from a cut) should not wait that long.
		"-c", "wal_retrieve_retry_interval=200ms")
	if err != nil {
		return err
	}
	standby.srv.baseBackup = repl // the docker backend's container copies it (the local one: backup)
	pingReady := standby.ready
	standby.ready = func(ctx context.Context) error {
		if err := pingReady(ctx); err != nil {
			return err
		}
		if standby.restarted {
			return nil // it may have been promoted, or its link cut: it serves as it is
		}
		return pgStreaming(ctx, standby.Addr)
	}
	c.add(standby)
	return c.launchAll(ctx, []*node{standby})
}

// pgAllowReplication lets a standby stream from the server at addr from any address: a
// container's standby reaches its primary from the run network's gateway (through the
// replication proxy), which neither lockchaos/postgres's pg_hba.conf nor the official image's
// lets in ("all" matches no replication connection; the local server's initdb lets 127.0.0.1
// in already). The server appends the line itself (COPY TO PROGRAM, as the superuser the harness
// is), wherever its pg_hba.conf is, and reloads it.
func pgAllowReplication(ctx context.Context, addr string) error {
	conn, err := pgConnect(ctx, addr)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var hba string
	if err := conn.QueryRow(ctx, "SHOW hba_file").Scan(&hba); err != nil {
		return err
	}
	if strings.ContainsAny(hba, "'\"\\$`") {
		return fmt.Errorf("pg_hba.conf's path %q has a quote or $ in it", hba)
	}
	// No row: echo reads no input, and a row written after it exited broke the pipe (under load).
	if _, err := conn.Exec(ctx, `COPY (SELECT 1 WHERE false) TO PROGRAM 'echo "host replication all all trust" >> "`+hba+`"'`); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "SELECT pg_reload_conf()")
	return err
}

// pgBaseBackup makes a standby's data dir once: a base backup of the primary at host:port (the
// replication proxy), its WAL streamed alongside, and standby.signal, so the server starts in
// recovery and streams from the primary (primary_conninfo is on its command line).
func pgBaseBackup(dir string, cred *syscall.Credential, host, port string) error {
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		return nil
	}
	if err := runOnce(dir, cred, filepath.Join(pgBinDir, "pg_basebackup"), "-h", host, "-p", port,
		"-U", PostgresUser, "-D", data, "-X", "stream", "--checkpoint=fast"); err != nil {
		return err
	}
	signal := filepath.Join(data, "standby.signal")
	if err := os.WriteFile(signal, nil, 0o600); err != nil {
		return err
	}
	if cred != nil {
		return os.Chown(signal, int(cred.Uid), int(cred.Gid))
	}
	return nil
}

// pgStreaming is nil once the standby at addr streams WAL from its primary.
func pgStreaming(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := pgConnect(ctx, addr)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var status string
	if err := conn.QueryRow(ctx, "SELECT coalesce((SELECT status FROM pg_stat_wal_receiver), 'none')").Scan(&status); err != nil {
		return err
	}
	if status != "streaming" {
		return fmt.Errorf("standby's WAL receiver is %s, not streaming yet", status)
	}
	return nil
}

// pgInRecovery asks the server at addr whether it is a standby (pg_is_in_recovery).
func pgInRecovery(ctx context.Context, addr string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := pgConnect(ctx, addr)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	var standby bool
	err = conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&standby)
	return standby, err
}

// pgPrimary names the node that accepts writes now: the first, in node order, that answers and is
// not in recovery. It is the topology's Master and Leader.
func (c *topo) pgPrimary(ctx context.Context) (string, error) {
	var errs []string
	for _, n := range c.data {
		standby, err := pgInRecovery(ctx, n.Addr)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s: %v", n.Name, err))
		case standby:
			errs = append(errs, n.Name+": in recovery (a standby)")
		default:
			return n.Name, nil
		}
	}
	return "", fmt.Errorf("no node accepts writes: %s", strings.Join(errs, "; "))
}

// pgFailover fails the primary called master over as an HA manager (Patroni, repmgr,
// pg_auto_failover) does when the primary is lost. The old primary is fenced first: killed
// (SIGKILL) for good, as a dead host is, or as Patroni's watchdog resets a primary that could not
// demote itself before its leader key expired, so that no client writes to it once the standby
// is promoted (no split brain: Patroni promotes only after the old leader's key expired). Then the
// standby is promoted (pg_promote, waiting until it accepts writes). Clients that list both nodes
// with target_session_attrs=read-write reconnect to it. What the standby had not received is
// lost — with the failover fault, everything since the run began, as the fault cut replication —
// and advisory locks always: they live in the old primary's memory and are never replicated.
func (c *topo) pgFailover(ctx context.Context, master string) error {
	old, err := c.node(master)
	if err != nil {
		return err
	}
	if standby, err := pgInRecovery(ctx, old.Addr); err != nil {
		return fmt.Errorf("ask %s whether it is the primary: %w", master, err)
	} else if standby {
		return fmt.Errorf("%s is a standby, not the primary (fail over the master)", master)
	}
	if err := c.Kill(ctx, master); err != nil {
		return fmt.Errorf("fence %s: %w", master, err)
	}
	var errs []error
	for _, n := range c.data {
		if n != old {
			if err := pgPromote(ctx, n.Addr); err != nil {
				errs = append(errs, fmt.Errorf("promote %s: %w", n.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// pgPromote promotes the standby at addr and waits (up to 30 s) until it accepts writes.
func pgPromote(ctx context.Context, addr string) error {
	conn, err := pgConnect(ctx, addr)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_promote(true, 30)").Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("pg_promote: not promoted within 30 s")
	}
	return nil
}
