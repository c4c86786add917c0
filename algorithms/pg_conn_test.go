package algorithms

import (
	"testing"
)

// TestPgConnConfig: one address is one host; MultiHost lists every address, in order, and keeps
// only a connection that takes writes (target_session_attrs=read-write), as libpq does.
func TestPgConnConfig(t *testing.T) {
	one, err := pgConnConfig(Config{Client: 2, Addrs: []string{"127.0.0.1:5001", "127.0.0.1:5002"}})
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
	multi, err := pgConnConfig(Config{Client: 2, MultiHost: true, Addrs: []string{"127.0.0.1:5001", "127.0.0.1:5002"}})
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
