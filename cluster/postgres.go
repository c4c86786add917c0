package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is one PostgreSQL server (docs/design.md#session-locks-and-more-services), from Debian's postgresql, initdb per run.
const Postgres = "postgres"

// KindPostgres is a PostgreSQL server.
const KindPostgres Kind = "postgres"

// PostgresUser is the database role every client and the harness connect as (trust auth on
// 127.0.0.1; initdb makes it the superuser).
const PostgresUser = "postgres"

// pgBinDir is where Debian puts the server binaries of its newest PostgreSQL; a variable so a
// test or a packager can point elsewhere. Empty when none is installed.
var pgBinDir = newestPgBinDir()

func newestPgBinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d
		}
	}
	return ""
}

func pgMajor(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// pgFlags are what the server runs with beyond its addresses. Everything else is PostgreSQL's
// default, fsync and synchronous_commit included: the lock state under test (advisory locks,
// lease rows) is what a production server keeps.
var pgFlags = []string{
	"-c", "listen_addresses=127.0.0.1",
	"-c", "max_connections=100",
	"-c", "shared_buffers=16MB",
	"-c", "log_min_messages=warning",
	"-c", "log_connections=off",
}

// pgPort is a PostgreSQL container's port: the official image's.
const pgPort = 5432

func init() {
	// The data dir is the server's state, kept by a restart as the local backend keeps it;
	// PostgreSQL refuses to run as root (the official image's --user postgres).
	registerKind(KindPostgres, kind{
		localLogin: func(int) SQLLogin { return localPgAdmin },
		appName:    true,
		// A server restarted after SIGKILL recovers first (it fsyncs its data dir and replays the
		// WAL): on a loaded 2-core machine that took more than 15 s in 2 of 21 restarts.
		ready:       45 * time.Second,
		container:   &Container{Image: func(s Spec) string { return s.PostgresImage }, Port: pgPort, Reuse: true, User: "postgres", Ready: 45 * time.Second, start: postgresContainer},
		wireSupport: "not parsed: the PostgreSQL protocol (its faults act at the harness's cs: points, and session-kill at the server)",
		ping:        pgPing,
		login:       pgLogin,
		external:    oneExternalServer(KindPostgres, Postgres),
	})
	registerTopology(Postgres, topology{
		family: "sql", clients: KindPostgres,
		nodes:        oneServer(Postgres),
		needs:        pgRequirements,
		containers:   []Kind{KindPostgres},
		start:        (*topo).startPostgres,
		leader:       pgServer,
		idleTimeout:  true,
		sql:          KindPostgres,
		killSessions: pgKillSessions,
	})
}

// pgIdleFlags end a session idle for d, in a transaction or not (none for 0).
func pgIdleFlags(d time.Duration) []string {
	if d <= 0 {
		return nil
	}
	ms := strconv.FormatInt(max(d.Milliseconds(), 1), 10)
	return []string{"-c", "idle_session_timeout=" + ms, "-c", "idle_in_transaction_session_timeout=" + ms}
}

// pgRequirements: initdb and postgres from Debian's postgresql, and, when the harness runs as
// root, the postgres user they run as (PostgreSQL refuses to run as root).
func pgRequirements() []Requirement { return pgBinRequirements("initdb", "postgres") }

// pgBinRequirements: the named binaries of Debian's postgresql, and the user they run as.
func pgBinRequirements(bins ...string) []Requirement {
	var out []Requirement
	for _, b := range bins {
		r := Requirement{Name: b, Fix: "install it: apt-get install postgresql, or run make deps"}
		if pgBinDir == "" {
			r.Detail = "no /usr/lib/postgresql/<version>/bin/" + b
		} else if r = checkFile(filepath.Join(pgBinDir, b), "postgresql"); r.OK {
			r.Detail += fmt.Sprintf(" (PostgreSQL %d)", pgMajor(pgBinDir))
		}
		out = append(out, r)
	}
	return append(out, userRequirements(serverUser, "postgresql")...)
}

// serverUser is who runs PostgreSQL and pgbouncer when the harness is root.
const serverUser = "postgres"

// serverCred returns the credential to run PostgreSQL and pgbouncer with (runAs).
func serverCred() (*syscall.Credential, error) { return runAs(serverUser) }

// newPostgresNode makes (not starts) a PostgreSQL node named name on port. Its data dir is made
// by initdb at the first start and kept on Restart: a restart is a new postmaster over the same
// data, and what lives in memory (advisory locks, sessions) is gone, as after a crash.
func (c *topo) newPostgresNode(name string, port int) (*node, error) {
	return c.newPgNode(name, port, pgInitdb)
}

// newPgNode is newPostgresNode with the data dir made by mkData (in the node's dir, as cred's
// user) at the first start, and extra server flags.
func (c *topo) newPgNode(name string, port int, mkData func(dir string, cred *syscall.Credential) error, flags ...string) (*node, error) {
	cred, err := serverCred()
	if err != nil && c.be.name() == Local {
		return nil, err // the docker backend's server runs as its image's user
	}
	var initErr error
	argv := func(dir string) []string {
		initErr = mkData(dir, cred)
		argv := append([]string{filepath.Join(pgBinDir, "postgres"),
			"-D", filepath.Join(dir, "data"),
			"-p", strconv.Itoa(port),
			// No unix socket: clients and lockchaos reach it over TCP, and a socket's path (the node
			// dir's, under a test's long temp dir) may exceed the 107 bytes a socket path can have.
			"-k", "",
		}, append(pgFlags, pgIdleFlags(c.spec.SessionIdleTimeout)...)...)
		return append(argv, flags...)
	}
	nd := c.newNode(name, KindPostgres, []int{port}, server{argv: argv, cred: cred, extra: flags})
	nd.ready = func(ctx context.Context) error {
		if initErr != nil {
			return initErr
		}
		return pgPing(ctx, nd.Addr, localPgAdmin)
	}
	return nd, nil
}

// pgInitdb makes the data dir once: trust auth (local and 127.0.0.1). initdb syncs its files
// (no -N): a server restarted after SIGKILL fsyncs the whole data dir before it accepts anyone,
// and with initdb's 40 MB still dirty that took over 15 s on this loaded machine (1 restart of
// 5); synced at initdb it costs about as much as -N did (2.35 s against 2.31 s under load).
func pgInitdb(dir string, cred *syscall.Credential) error {
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		return nil
	}
	return runOnce(dir, cred, filepath.Join(pgBinDir, "initdb"), "-D", data, "-A", "trust",
		"-U", PostgresUser, "-E", "UTF8", "--locale=C", "--no-instructions")
}

func (c *topo) startPostgres(ctx context.Context) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	nd, err := c.newPostgresNode("pg-1", ports[0])
	if err != nil {
		return err
	}
	c.add(nd)
	return c.launchAll(ctx, c.data)
}

// PostgresURL is the connection string of a local PostgreSQL server (or pgbouncer) at addr, for
// clients and the harness: trust auth, no TLS, the postgres database; appName tags the session
// (pg_stat_activity.application_name) so SessionKiller can find a client's sessions.
func PostgresURL(addr, appName string) string {
	l := localPgAdmin
	l.AppName = appName
	return l.PostgresURL(addr)
}

// pgConnect opens the harness's connection to a local server (never through a client's proxy).
func pgConnect(ctx context.Context, addr string) (*pgx.Conn, error) {
	return pgConnectAs(ctx, addr, localPgAdmin)
}

// pgConnectAs opens a connection to the server at addr as l.
func pgConnectAs(ctx context.Context, addr string, l SQLLogin) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(l.PostgresURL(addr))
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// pgPing is nil once the server at addr accepts l's connection and answers a query.
func pgPing(ctx context.Context, addr string, l SQLLogin) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := pgConnectAs(ctx, addr, l)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// pgServer names the PostgreSQL server: the node that holds every lock (Master, Leader, and the
// faults' "master" selector).
var pgServer = serverOf(KindPostgres)

// ClientAppName is the application_name client c's sessions carry, by which SessionKiller finds
// them.
func ClientAppName(client int) string { return fmt.Sprintf("lockchaos-client-%d", client) }

// pgKillSessions ends client's sessions on the PostgreSQL node that takes writes (Master) with
// pg_terminate_backend, found by their application_name through an admin connection to the
// server itself.
func pgKillSessions(c *topo, ctx context.Context, client int) (int, error) {
	name, err := c.Master(ctx) // the one server, or postgres-standby's primary now
	if err != nil {
		return 0, err
	}
	conn, err := pgConnectAs(ctx, c.byName[name].Addr, *c.sqlLogin(0))
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	// pg_terminate_backend(pid, 2000) waits until the backend has exited (its locks released).
	// Two steps: in one statement the planner may call pg_terminate_backend before it filters.
	rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", c.sqlLogin(client).AppName)
	if err != nil {
		return 0, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pid := range pids {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT pg_terminate_backend($1, 2000)", pid).Scan(&ok); err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// postgresContainer runs the local backend's server flags (pgFlags), listening on every interface of
// its container (only its published port on 127.0.0.1 and the run network reach it), without a
// unix socket, as the local server has none. A server restarted after SIGKILL syncs its data dir
// before it recovers: file by file (fsync, the default) that outlasted the 45 s readiness wait in
// 1 of 2 restarts in a container's overlay filesystem under the race detector here; one syncfs
// (PostgreSQL 14 and later) makes the same data durable at once — and lets initdb skip its own
// syncs (POSTGRES_INITDB_ARGS=--no-sync, which the official image reads too): a container's
// first start took 7.4 s with them (BENCHMARKS.md "Cost of a run"). TZ: without it initdb scans
// every zone file for one matching the container's clock (3 s of its 5.5 s here).
//
// A standby (server.baseBackup) starts in recovery (standby.signal) on a copy of its primary's
// data dir: its image's own, or one pg_basebackup makes at its first start (pgStandbyScript); a
// restart finds the copy and starts the server over it.
func postgresContainer(e ContainerEnv, n *node, _ bool) (cmd, env []string) {
	cmd = []string{"postgres", "-p", strconv.Itoa(pgPort), "-c", "unix_socket_directories=", "-c", "recovery_init_sync_method=syncfs"}
	for i := 0; i+1 < len(pgFlags); i += 2 {
		if strings.HasPrefix(pgFlags[i+1], "listen_addresses=") {
			cmd = append(cmd, "-c", "listen_addresses=*")
			continue
		}
		cmd = append(cmd, pgFlags[i], pgFlags[i+1])
	}
	cmd = append(append(cmd, pgIdleFlags(e.Spec().SessionIdleTimeout)...), n.srv.extra...)
	env = []string{"POSTGRES_HOST_AUTH_METHOD=trust", "POSTGRES_INITDB_ARGS=--no-sync", "TZ=UTC"}
	if n.srv.baseBackup == "" {
		return cmd, env
	}
	host, port, _ := net.SplitHostPort(n.srv.baseBackup)
	quoted := make([]string, len(cmd))
	for i, a := range cmd {
		quoted[i] = "'" + a + "'" // no flag has a single quote
	}
	return []string{"sh", "-c", pgStandbyScript(host, port, strings.Join(quoted, " "))}, env
}

// pgStandbyScript starts a standby's container: postgres (the quoted command) on a data dir that
// is a copy of its primary's. An image that carries a data dir made at build (lockchaos/postgres)
// starts the primary from it and every standby from its own copy of it, the same cluster stopped
// cleanly at the same checkpoint: a valid standby (a cold base backup), which streams the
// primary's WAL from that checkpoint on, so it starts without a base backup (pg_basebackup took
// most of a standby's start: 4.5 s for the topology on docker, measured under load). It becomes
// a standby at its first start only (a marker file): a promoted one restarts as the primary it
// became. An image without one (the official image, whose entrypoint runs initdb at a first
// start of postgres) copies the primary with pg_basebackup into a dir of its own, once.
func pgStandbyScript(host, port, postgres string) string {
	const backup = "/var/lib/postgresql/standby"
	return `if [ -s "$PGDATA/PG_VERSION" ]; then d=$PGDATA; ` +
		`[ -e "$d/lockchaos-standby" ] || { : > "$d/standby.signal" && : > "$d/lockchaos-standby"; } || exit 1; ` +
		`else d=` + backup + `; [ -s $d/PG_VERSION ] || { pg_basebackup -h ` + host + ` -p ` + port + ` -U ` + PostgresUser +
		` -D $d -X stream --checkpoint=fast && : > $d/standby.signal; } || exit 1; fi; exec ` + postgres + ` -D "$d"`
}

// pgLogin fills a cluster file's PostgreSQL login with libpq's defaults: the user postgres, the
// database the user's name, sslmode disable.
func pgLogin(n *ExternalNode) error {
	if n.User == "" {
		n.User = PostgresUser
	}
	if n.Database == "" {
		n.Database = n.User
	}
	switch n.SSLMode {
	case "":
		n.SSLMode = "disable"
	case "disable", "allow", "prefer", "require", "verify-ca", "verify-full":
	default:
		return fmt.Errorf("sslmode %q (use disable, allow, prefer, require, verify-ca or verify-full)", n.SSLMode)
	}
	return nil
}
