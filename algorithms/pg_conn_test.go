package algorithms

import (
	"testing"
)

// TestPgConnConfig: one address is one host; MultiHost lists every address, in order, and keeps
// only a connection that takes writes (target_session_attrs=read-write), as libpq does; every
// part of the login reaches the connection as given, escaped on the way; no login is an error.
func TestPgConnConfig(t *testing.T) {
	login := &SQLLogin{User: "app user", Password: "p@ss:/?word", Database: "locks db", AppName: "lockchaos-client-2", SSLMode: "disable"}
	if _, err := pgConnConfig(Config{Client: 2, Addrs: []string{"127.0.0.1:5001"}}); err == nil {
		t.Error("no login: no error")
	}
	one, err := pgConnConfig(Config{Client: 2, Addrs: []string{"127.0.0.1:5001", "127.0.0.1:5002"}, SQL: login})
	if err != nil {
		t.Fatal(err)
	}
	if one.Host != "127.0.0.1" || one.Port != 5001 || len(one.Fallbacks) != 0 || one.ValidateConnect != nil {
		t.Errorf("single host: %s:%d, %d fallbacks, validate %v; want 127.0.0.1:5001 alone (pgbouncer's second address is for faults)",
			one.Host, one.Port, len(one.Fallbacks), one.ValidateConnect != nil)
	}
	if got := one.RuntimeParams["application_name"]; got != "lockchaos-client-2" {
		t.Errorf("application_name %q", got)
	}
	if one.User != login.User || one.Password != login.Password || one.Database != login.Database || one.TLSConfig != nil {
		t.Errorf("login %q %q %q (TLS %v), want %+v", one.User, one.Password, one.Database, one.TLSConfig != nil, *login)
	}
	multi, err := pgConnConfig(Config{Client: 2, MultiHost: true, Addrs: []string{"127.0.0.1:5001", "127.0.0.1:5002"}, SQL: login})
	if err != nil {
		t.Fatal(err)
	}
	if multi.Port != 5001 || len(multi.Fallbacks) != 1 || multi.Fallbacks[0].Port != 5002 {
		t.Errorf("multi-host: first %d, fallbacks %+v; want 5001 then 5002", multi.Port, multi.Fallbacks)
	}
	if multi.ValidateConnect == nil {
		t.Errorf("multi-host: no ValidateConnect; want target_session_attrs=read-write's")
	}
}
