// Package pgurl builds PostgreSQL connection strings for the harness's own connections (cluster)
// and the clients' (algorithms) alike: a URL with every part escaped, so a password or a database
// name with spaces, slashes or @ reaches the server as given.
package pgurl

import "net/url"

// Login is how one connection logs in: the parts of the connection string besides the address.
type Login struct {
	User, Password, Database string
	AppName                  string // application_name ("": none)
	SSLMode                  string // sslmode ("": libpq's default)
}

// URL is l's connection string for hostports (one host:port, or libpq's comma-separated list of
// several), with the extra parameters q (nil: none).
func URL(l Login, hostports string, q url.Values) string {
	v := url.Values{}
	for k, vs := range q {
		v[k] = vs
	}
	if l.SSLMode != "" {
		v.Set("sslmode", l.SSLMode)
	}
	if l.AppName != "" {
		v.Set("application_name", l.AppName)
	}
	u := url.URL{Scheme: "postgres", Host: hostports, Path: "/" + l.Database, RawQuery: v.Encode()}
	if l.Password != "" {
		u.User = url.UserPassword(l.User, l.Password)
	} else {
		u.User = url.User(l.User)
	}
	return u.String()
}
