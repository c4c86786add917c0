package algorithms

import (
	"errors"
	"net/url"

	"github.com/lockchaos/lockchaos/internal/pgurl"
)

// SQLLogin is how one client logs in to a SQL topology's server (Config.SQL): the parts of its
// connection string besides the address, which is its proxy's. The cluster gives it
// (cluster.Endpoints.SQL, whose fields these are); a process client gets it in init
// (docs/process-clients.md).
type SQLLogin struct {
	User     string `json:"user"`
	Password string `json:"password,omitempty"`
	Database string `json:"database,omitempty"`
	// AppName is PostgreSQL's application_name: the tag session-kill finds the client's
	// sessions by. Empty on MariaDB, where the local server's clients each log in under a name
	// of their own.
	AppName string `json:"application_name,omitempty"`
	// SSLMode is PostgreSQL's sslmode.
	SSLMode string `json:"sslmode,omitempty"`
}

// errNoLogin: a SQL algorithm was configured without Config.SQL.
var errNoLogin = errors.New("no SQL login (Config.SQL: the cluster's Endpoints.SQL)")

// pgURL is l's connection string for hostports (several for a multi-host string, libpq's
// comma-separated form), every part escaped.
func (l SQLLogin) pgURL(hostports string, extra url.Values) string {
	return pgurl.URL(pgurl.Login(l), hostports, extra)
}
