package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MariaDB is one MariaDB server (docs/design.md#session-locks-and-more-services), Debian's mariadb-server, its data dir made by
// mariadb-install-db per run; on the docker backend, a container of the MariaDB image (make
// images builds lockchaos/mariadb with its data dir made).
const MariaDB = "mariadb"

// KindMariaDB is a MariaDB server.
const KindMariaDB Kind = "mariadb"

// MariaDBAdmin is the account the harness connects as (root on 127.0.0.1, no password:
// mariadb-install-db's "normal" root). Clients log in under their own names (MariaDBClientUser),
// matched by an anonymous account that may do nothing but take user-level locks.
const MariaDBAdmin = "root"

// Where Debian puts MariaDB's server and its data-dir maker; variables so a test or a packager
// can point elsewhere.
var (
	mariadbdBin     = "/usr/sbin/mariadbd"
	mariadbInstall  = "/usr/bin/mariadb-install-db"
	mariadbUserName = "mysql" // who runs mariadbd when the harness is root (it refuses root)
)

// mariadbConfig is the server's option file, read by mariadb-install-db and mariadbd alike
// (--defaults-file: nothing of /etc/mysql). Smaller InnoDB files than the defaults (12 MB system
// tablespace and an 8 MB redo log instead of 12 MB and 96 MB): mariadb-install-db took 3.6 s
// with the defaults here, 1.2–1.4 s with these; the state under test (user-level locks) lives
// in memory and is not touched by them. Everything else is MariaDB's default, durability
// included. No unix socket (socket= empty): clients and lockchaos use TCP, and a socket in the
// node dir, under a test's long temp dir, may exceed the 107 bytes a socket path can have.
func mariadbConfig(port int) []string {
	return []string{
		"[mariadbd]",
		"bind-address = 127.0.0.1",
		fmt.Sprintf("port = %d", port),
		"socket =",
		"skip-name-resolve",
		"innodb_data_file_path = ibdata1:12M:autoextend",
		"innodb_log_file_size = 8M",
		"innodb_buffer_pool_size = 16M",
		"max_connections = 100",
		"log_warnings = 1",
	}
}

// mariadbPort is the server's port in a container, as the official image has it.
const mariadbPort = 3306

func init() {
	// The data dir is the server's state, kept by a restart as the local backend keeps it.
	registerKind(KindMariaDB, kind{
		localLogin: func(client int) SQLLogin {
			if client == 0 {
				return SQLLogin{User: MariaDBAdmin}
			}
			return SQLLogin{User: MariaDBClientUser(client)}
		},
		container:   &Container{Image: func(s Spec) string { return s.MariaDBImage }, Port: mariadbPort, Reuse: true, Ready: 45 * time.Second, start: mariadbContainer},
		wireSupport: "not parsed: the MySQL protocol (its faults act at the harness's cs: points, and session-kill at the server)",
		ping:        mariadbPing,
		login:       mariadbLogin,
		external:    oneExternalServer(KindMariaDB, MariaDB),
	})
	registerTopology(MariaDB, topology{
		family: "sql", clients: KindMariaDB,
		nodes:        oneServer(MariaDB),
		needs:        mariadbRequirements,
		containers:   []Kind{KindMariaDB},
		start:        (*topo).startMariaDB,
		leader:       serverOf(KindMariaDB),
		idleTimeout:  true,
		sql:          KindMariaDB,
		killSessions: mariadbKillSessions,
	})
}

// mariadbRequirements: mariadbd and mariadb-install-db from Debian's mariadb-server, and, when the
// harness runs as root, the mysql user mariadbd runs as.
func mariadbRequirements() []Requirement {
	return append([]Requirement{
		withVersion(checkFile(mariadbdBin, "mariadb-server"), mariadbVersion),
		checkFile(mariadbInstall, "mariadb-server"),
	}, userRequirements(mariadbUserName, "mariadb-server")...)
}

// mariadbVersion turns "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for ..." into
// "10.11.19-MariaDB-0+deb12u1".
func mariadbVersion(path string) string {
	f := strings.Fields(output(path, "--version"))
	for i, w := range f {
		if w == "Ver" && i+1 < len(f) {
			return f[i+1]
		}
	}
	return ""
}

func (c *topo) startMariaDB(ctx context.Context) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	cred, err := runAs(mariadbUserName)
	if err != nil && c.be.name() == Local {
		return err // a container's server runs as its image has it
	}
	// The data dir is made at the first start and kept on Restart: a restart is a new mariadbd
	// over the same data (InnoDB recovers it), and what lives in memory — sessions and their
	// user-level locks — is gone, as after a crash.
	var initErr error
	argv := func(dir string) []string {
		cnf := filepath.Join(dir, "my.cnf")
		initErr = mariadbInit(dir, cnf, ports[0], cred)
		out := []string{mariadbdBin, "--defaults-file=" + cnf, "--datadir=" + filepath.Join(dir, "data"),
			"--pid-file=" + filepath.Join(dir, "mariadbd.pid")}
		return append(out, mariadbIdleFlags(c.spec.SessionIdleTimeout)...)
	}
	nd := c.newNode("mariadb-1", KindMariaDB, ports, server{argv: argv, cred: cred})
	nd.ready = func(ctx context.Context) error {
		if initErr != nil {
			return initErr
		}
		return mariadbReady(ctx, nd.Addr)
	}
	c.add(nd)
	return c.launchAll(ctx, c.data)
}

// mariadbIdleFlags end a session idle for d, in whole seconds rounded up (none for 0).
func mariadbIdleFlags(d time.Duration) []string {
	if d <= 0 {
		return nil
	}
	s := strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
	return []string{"--wait_timeout=" + s, "--interactive_timeout=" + s}
}

// mariadbContainer runs the server with the local backend's options (mariadbConfig) on every
// address of the container, its data dir the image's: lockchaos/mariadb's, made at build, or the
// official image's, made by its entrypoint at the first start with an empty root password on
// every host. The same command runs in both (the official entrypoint runs it as mysql, where
// --user=root is ignored with a warning).
func mariadbContainer(e ContainerEnv, _ *node, _ bool) (cmd, env []string) {
	cmd = []string{"mariadbd", "--no-defaults", "--user=root", "--datadir=/var/lib/mysql",
		"--port=" + strconv.Itoa(mariadbPort), "--bind-address=0.0.0.0"}
	for _, line := range mariadbConfig(mariadbPort)[1:] {
		key, value, set := strings.Cut(line, " =")
		switch {
		case key == "bind-address" || key == "port" || key == "socket": // the container's own
		case set:
			cmd = append(cmd, "--"+key+"="+strings.TrimSpace(value))
		default:
			cmd = append(cmd, "--"+key)
		}
	}
	return append(cmd, mariadbIdleFlags(e.Spec().SessionIdleTimeout)...), []string{"MARIADB_ALLOW_EMPTY_ROOT_PASSWORD=1", "TZ=UTC"}
}

// mariadbInit writes the option file and makes the data dir, once.
func mariadbInit(dir, cnf string, port int, cred *syscall.Credential) error {
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "mysql")); err == nil {
		return nil
	}
	if _, err := writeConfig(dir, "my.cnf", mariadbConfig(port)); err != nil {
		return err
	}
	install := func() error {
		return runOnce(dir, cred, mariadbInstall, "--defaults-file="+cnf, "--datadir="+data,
			"--auth-root-authentication-method=normal", "--skip-test-db")
	}
	// Once more on a fresh data dir when it fails: 1 of about 15 installs failed (exit 1) when
	// two clusters started at once under selftest's load here, and the next run's install did not.
	if err := install(); err != nil {
		if rmErr := os.RemoveAll(data); rmErr != nil {
			return errors.Join(err, rmErr)
		}
		if err2 := install(); err2 != nil {
			return fmt.Errorf("%w (and again: %w)", err, err2)
		}
	}
	return nil
}

// MariaDBClientUser is the user name client c logs in as: the tag by which SessionKiller finds
// its sessions (SHOW PROCESSLIST's User shows the name a client gave).
func MariaDBClientUser(client int) string { return ClientAppName(client) }

// mariadbOpen returns one connection (one session) of l at addr, and how to close it.
func mariadbOpen(ctx context.Context, addr string, l SQLLogin) (*sql.Conn, func(), error) {
	c, err := mysql.NewConnector(l.MySQLConfig(addr))
	if err != nil {
		return nil, nil, err
	}
	db := sql.OpenDB(c)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return conn, func() { conn.Close(); db.Close() }, nil
}

// mariadbPing is nil once the server at addr accepts l's session and answers.
func mariadbPing(ctx context.Context, addr string, l SQLLogin) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, done, err := mariadbOpen(ctx, addr, l)
	if err != nil {
		return err
	}
	defer done()
	return conn.PingContext(ctx)
}

// mariadbReady is nil once the server answers, and makes (once; it stays in the data dir) the
// anonymous account the clients log in through: any name, no password, no privileges —
// user-level locks need none. On every host: the local server listens on 127.0.0.1 only, and a
// container's clients come from its network's gateway.
func mariadbReady(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, done, err := mariadbOpen(ctx, addr, SQLLogin{User: MariaDBAdmin})
	if err != nil {
		return err
	}
	defer done()
	_, err = conn.ExecContext(ctx, "CREATE USER IF NOT EXISTS ''@'%'")
	return err
}

// mariadbKillSessions ends client's sessions with KILL, found by their user name in
// SHOW PROCESSLIST through an admin connection to the server itself, and waits
// (up to 2 s) until each has left the list: a session's user-level locks are released as its
// thread ends, which KILL only asks for.
//
// On an external server the clients share the cluster file's user: their sessions cannot be told
// apart, and the fault is refused (unfired, the run unknown, with the reason).
func mariadbKillSessions(c *topo, ctx context.Context, client int) (int, error) {
	if c.spec.External != nil {
		return 0, fmt.Errorf("%w: the clients of an external mariadb share the cluster file's user, so their sessions cannot be told apart (run session-kill on the local backend)", ErrNoSessions)
	}
	name, err := serverOf(KindMariaDB)(c, ctx)
	if err != nil {
		return 0, err
	}
	conn, done, err := mariadbOpen(ctx, c.byName[name].Addr, *c.sqlLogin(0))
	if err != nil {
		return 0, err
	}
	defer done()
	ids, err := mariadbSessions(ctx, conn, client)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		_, err := conn.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(id, 10))
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1094 { // unknown thread id: it ended by itself
			continue
		}
		if err != nil {
			return n, err
		}
		n++
	}
	for deadline := time.Now().Add(2 * time.Second); n > 0; time.Sleep(10 * time.Millisecond) {
		left, err := mariadbSessions(ctx, conn, client)
		if err != nil || len(left) == 0 {
			return n, err
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("sessions %v of client %d still there 2 s after KILL", left, client)
		}
	}
	return n, nil
}

// mariadbSessions lists client's sessions with SHOW PROCESSLIST, which the server answers from its
// thread list. information_schema.PROCESSLIST materializes a temporary table first, and the
// first such query of a run crashed MariaDB 10.11.19 (Debian 12) once, with signal 11 in
// ha_maria::drop_table as it freed that table (1 of about 80 session-kill runs).
func mariadbSessions(ctx context.Context, conn *sql.Conn, client int) ([]int64, error) {
	rows, err := conn.QueryContext(ctx, "SHOW PROCESSLIST")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	idCol, userCol := slices.Index(cols, "Id"), slices.Index(cols, "User")
	if idCol < 0 || userCol < 0 {
		return nil, fmt.Errorf("SHOW PROCESSLIST: no Id or User column in %v", cols)
	}
	user := MariaDBClientUser(client)
	var ids []int64
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		dest := make([]any, len(cols))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if string(vals[userCol]) != user {
			continue
		}
		id, err := strconv.ParseInt(string(vals[idCol]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("SHOW PROCESSLIST: session id %q: %w", vals[idCol], err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// mariadbLogin checks a cluster file's MariaDB login: a user, and no sslmode (PostgreSQL's).
func mariadbLogin(n *ExternalNode) error {
	switch {
	case n.User == "":
		return errors.New("no user (add user: the account the clients log in as; GET_LOCK needs no privilege)")
	case n.SSLMode != "":
		return errors.New("sslmode is PostgreSQL's (remove it)")
	}
	return nil
}
