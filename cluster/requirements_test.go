package cluster

import (
	"strings"
	"testing"
)

func TestRequirements(t *testing.T) {
	rs := Requirements(Local)
	if len(rs) < 4 {
		t.Fatalf("Requirements(local) = %+v", rs)
	}
	for _, r := range rs {
		t.Logf("%-32s ok=%v %s", r.Name, r.OK, r.Detail)
		if !r.OK && (r.Fix == "" || r.Detail == "") {
			t.Errorf("%s: a missing requirement needs a detail and a fix: %+v", r.Name, r)
		}
		if strings.HasPrefix(r.Name, "redis-server") && r.OK && !strings.Contains(r.Detail, ".") {
			t.Errorf("redis-server detail %q has no version", r.Detail)
		}
	}
	old := redisServerBin
	redisServerBin = "redis-server-not-installed"
	defer func() { redisServerBin = old }()
	r := Requirements(Local)[0]
	if r.OK || !strings.Contains(r.Fix, "apt-get install redis-server") || !strings.Contains(r.Fix, "make deps") {
		t.Errorf("missing redis-server: %+v", r)
	}
	if got := Requirements("nope"); len(got) != 1 || got[0].OK {
		t.Errorf("Requirements(nope) = %+v", got)
	}
}
