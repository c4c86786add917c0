package algorithms

import (
	"fmt"
	"strings"
)

// sessionName is the tag of client c's sessions (cluster.ClientAppName): PostgreSQL's
// application_name, MariaDB's user name. session-kill finds a holder's sessions by it.
func sessionName(c int) string { return fmt.Sprintf("lockchaos-client-%d", c) }

// pgRole and pgDatabase are what every client of the PostgreSQL topologies logs in as (trust
// auth on 127.0.0.1; cluster.PostgresUser).
const (
	pgRole     = "postgres"
	pgDatabase = "postgres"
)

// SQLLogin is how one client logs in to a SQL topology's server: the parts of its DSN besides the
// address, which is its proxy's. A process client gets them in init (docs/process-clients.md).
type SQLLogin struct {
	User     string `json:"user"`
	Database string `json:"database,omitempty"`
	// AppName is PostgreSQL's application_name: the tag session-kill finds the client's
	// sessions by. Empty on MariaDB, where the user name is that tag.
	AppName string `json:"application_name,omitempty"`
}

// SQLLoginFor is client c's login on topology; ok is false when the topology is not SQL.
func SQLLoginFor(topology string, c int) (l SQLLogin, ok bool) {
	switch {
	case topology == "postgres" || strings.HasPrefix(topology, "postgres-"):
		return SQLLogin{User: pgRole, Database: pgDatabase, AppName: sessionName(c)}, true
	case topology == "mariadb":
		return SQLLogin{User: sessionName(c)}, true
	}
	return SQLLogin{}, false
}
