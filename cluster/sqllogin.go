package cluster

import (
	"fmt"
	"net/url"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lockchaos/lockchaos/internal/pgurl"
)

// SQLLogin is how a client (or the harness) logs in to a SQL server: the parts of its connection
// string besides the address. The local servers trust 127.0.0.1 (no password); a cluster file
// gives an external server's (ExternalNode's user, password, database, sslmode).
type SQLLogin struct {
	User     string
	Password string
	Database string // "" on MariaDB: GET_LOCK needs none
	// AppName is PostgreSQL's application_name, the tag session-kill finds a client's sessions
	// by: unique to the run on an external server, which other runs may share. "" on MariaDB,
	// whose local clients each log in under a name of their own instead.
	AppName string
	// SSLMode is PostgreSQL's sslmode ("disable" but where a cluster file says otherwise).
	SSLMode string
}

// localPgAdmin is the harness's own login to the PostgreSQL servers it starts.
var localPgAdmin = SQLLogin{User: PostgresUser, Database: "postgres", AppName: "lockchaos-harness", SSLMode: "disable"}

// PostgresURL is l's connection string for the server (or pgbouncer) at addr: a URL, every part
// escaped, with a 2 s connect timeout.
func (l SQLLogin) PostgresURL(addr string) string {
	return pgurl.URL(pgurl.Login(l), addr, url.Values{"connect_timeout": {"2"}})
}

// MySQLConfig is l's driver config for the MariaDB server at addr: no TLS, a 2 s dial timeout, and
// no driver log on stderr (a killed session is the point of a fault here).
func (l SQLLogin) MySQLConfig(addr string) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.DBName, cfg.Net, cfg.Addr = l.User, l.Password, l.Database, "tcp", addr
	cfg.Timeout = 2 * time.Second
	cfg.InterpolateParams = true
	cfg.Logger = &mysql.NopLogger{}
	return cfg
}

// sqlLogin is client's login to the topology's SQL server (client 0: the harness's own), or nil
// when the topology has none: the kind's own (kind.localLogin) on a server lockchaos started, the
// cluster file's on an external one, where PostgreSQL sessions are tagged with the run's prefix.
func (c *topo) sqlLogin(client int) *SQLLogin {
	sql := topologyRegistry[c.spec.Topology].sql
	if sql == "" {
		return nil
	}
	who := fmt.Sprintf("client-%d", client)
	if client == 0 {
		who = "harness"
	}
	k := kinds[sql]
	var l SQLLogin
	app := "lockchaos-" + who // ClientAppName(client) for a client
	if f := c.spec.External; f != nil {
		l = f.Nodes[0].Login()
		app = ProxyPrefix + c.be.runID() + "-" + who
	} else {
		l = k.localLogin(client)
	}
	if k.appName {
		l.AppName = app
	}
	return &l
}
