package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// PostgresPgBouncer is one PostgreSQL server behind pgbouncer in transaction pooling mode
// (docs/design.md#session-locks-and-more-services): clients reach pgbouncer (Endpoints.Addrs[0]), which runs each of their
// transactions on one of a small pool of server sessions. A session-level advisory lock taken
// through it stays on whichever server session ran the statement, which goes back to the pool:
// the holder's next statement, and every other client's, may run in that session or another
// (pgbouncer/pgbouncer#102, #418; goauthentik/authentik#23876).
const PostgresPgBouncer = "postgres-pgbouncer"

// KindPgBouncer is a pgbouncer.
const KindPgBouncer Kind = "pgbouncer"

// pgBouncerBin is Debian's pgbouncer.
var pgBouncerBin = "/usr/sbin/pgbouncer"

// PgBouncerImage is the docker backend's pgbouncer: `make images` builds it offline from Debian's
// pgbouncer (there is no official image to default to); the harness writes its configuration.
const PgBouncerImage = "lockchaos/pgbouncer"

// pgBouncerPort is pgbouncer's port in a container: its default.
const pgBouncerPort = 6432

// PgBouncerPoolSize is the server sessions pgbouncer keeps for the clients' database: fewer than
// the catalogue's 5 clients, so sessions are shared.
const PgBouncerPoolSize = 2

func init() {
	// A restart is a fresh pgbouncer with the same configuration: its pools are memory only.
	registerKind(KindPgBouncer, kind{
		container: &Container{Image: func(Spec) string { return PgBouncerImage }, Port: pgBouncerPort,
			User: "postgres", start: pgBouncerContainer},
		wireSupport: "not parsed: the PostgreSQL protocol, as the server's",
	})
	registerTopology(PostgresPgBouncer, topology{
		family: "sql", clients: KindPgBouncer, traits: []Trait{TraitPooler},
		nodes: oneServer(PostgresPgBouncer),
		needs: func() []Requirement {
			return append(pgRequirements(), withVersion(checkFile(pgBouncerBin, "pgbouncer"), pgBouncerVersion))
		},
		containers:   []Kind{KindPostgres, KindPgBouncer},
		start:        (*topo).startPgBouncer,
		leader:       pgServer,
		idleTimeout:  true,
		sql:          KindPostgres,
		killSessions: pgKillSessions,
	})
}

// startPgBouncer starts the server, then pgbouncer in front of it. pgbouncer is the first data
// node, so Endpoints.Addrs[0] is each client's way in through it; the server's own address (and a
// client's proxy to it) is there too, second, for the harness and for faults.
func (c *topo) startPgBouncer(ctx context.Context) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	pg, err := c.newPostgresNode("pg-1", ports[1])
	if err != nil {
		return err
	}
	cred, err := serverCred()
	if err != nil && c.be.name() == Local {
		return err // a container's pgbouncer runs as its image's user
	}
	var cfgErr error
	argv := func(dir string) []string {
		cfgErr = writePgBouncerConfig(dir, ports[0], ports[1], cred)
		return []string{pgBouncerBin, filepath.Join(dir, "pgbouncer.ini")}
	}
	pb := c.newNode("pgbouncer-1", KindPgBouncer, []int{ports[0]}, server{argv: argv, cred: cred, pooled: pg})
	pb.ready = func(ctx context.Context) error {
		if cfgErr != nil {
			return cfgErr
		}
		return pgPing(ctx, pb.Addr, localPgAdmin)
	}
	c.add(pb)
	c.add(pg)
	if err := c.launchAll(ctx, []*node{pg}); err != nil {
		return err
	}
	return c.launchAll(ctx, []*node{pb})
}

// writePgBouncerConfig writes pgbouncer.ini and its auth file into dir.
func writePgBouncerConfig(dir string, port, pgPort int, cred *syscall.Credential) error {
	if err := ownDir(dir, cred); err != nil {
		return err
	}
	auth := filepath.Join(dir, "userlist.txt")
	if err := os.WriteFile(auth, []byte(pgBouncerUsers), 0o644); err != nil {
		return err
	}
	_, err := writeConfig(dir, "pgbouncer.ini", pgBouncerConfig("127.0.0.1", port, "127.0.0.1", pgPort, auth))
	return err
}

// pgBouncerUsers is pgbouncer's auth file: the one user, no password (trust).
var pgBouncerUsers = strconv.Quote(PostgresUser) + ` ""` + "\n"

// pgBouncerConfig is pgbouncer.ini: listening on listen:port, pooling the server at
// pgHost:pgPort. Transaction pooling, a pool of PgBouncerPoolSize, trust auth (as the
// server's), everything else pgbouncer's default: server_reset_query (DISCARD ALL, which would
// drop a session's advisory locks) is not run in transaction mode, as server_reset_query_always
// is off. server_login_retry is 1 s, not pgbouncer's 15: after PostgreSQL restarts, pgbouncer
// refuses every client login until its retry is due, and with 15 s no client acquired or wrote
// again within a run (restart on postgres-pgbouncer was unknown 3 of 3: no write at all).
func pgBouncerConfig(listen string, port int, pgHost string, pgPort int, auth string) []string {
	return []string{
		"[databases]",
		fmt.Sprintf("postgres = host=%s port=%d dbname=postgres", pgHost, pgPort),
		"[pgbouncer]",
		"listen_addr = " + listen,
		fmt.Sprintf("listen_port = %d", port),
		"unix_socket_dir = ", // none: TCP only (a node dir's path may be too long for a socket's)
		"auth_type = trust",
		"auth_file = " + auth,
		"pool_mode = transaction",
		fmt.Sprintf("default_pool_size = %d", PgBouncerPoolSize),
		"min_pool_size = 0",
		"reserve_pool_size = 0",
		"max_client_conn = 200",
		"server_login_retry = 1",
		"admin_users = " + PostgresUser,
		"ignore_startup_parameters = extra_float_digits",
		"log_connections = 0",
		"log_disconnections = 0",
	}
}

// pgBouncerContainer writes the configuration into the container's /tmp and runs pgbouncer on
// every address of the container, pooling the server's container by name.
func pgBouncerContainer(_ ContainerEnv, n *node, _ bool) (cmd, env []string) {
	host, port, _ := net.SplitHostPort(n.srv.pooled.inner)
	pgPort, _ := strconv.Atoi(port)
	lines := pgBouncerConfig("0.0.0.0", pgBouncerPort, host, pgPort, "/tmp/userlist.txt")
	quoted := make([]string, len(lines))
	for i, l := range lines {
		quoted[i] = "'" + l + "'" // no line has a single quote
	}
	script := "printf '%s\\n' " + strings.Join(quoted, " ") + " > /tmp/pgbouncer.ini && printf '%s' '" +
		pgBouncerUsers + "' > /tmp/userlist.txt && exec pgbouncer /tmp/pgbouncer.ini"
	return []string{"sh", "-c", script}, nil
}

// pgBouncerVersion turns "PgBouncer 1.18.0\n..." into "1.18.0".
func pgBouncerVersion(path string) string {
	var name, v string
	fmt.Sscan(output(path, "--version"), &name, &v)
	return v
}
