package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestDockerNotLinked: this package's tests do not import cluster/docker, so the docker backend is
// not registered: Start refuses it in one ErrBadSpec line naming the import, and Requirements says
// the same with the fix.
func TestDockerNotLinked(t *testing.T) {
	t.Setenv(NoServers, "")
	_, err := Start(context.Background(), Spec{Topology: RedisSingle, Backend: Docker})
	if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), `import _ "github.com/lockchaos/lockchaos/cluster/docker"`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("Start on docker without its package: %v; want one ErrBadSpec line naming the import", err)
	}
	rs := Requirements(Docker)
	if len(rs) != 1 || rs[0].OK || !strings.Contains(rs[0].Fix, "cluster/docker") {
		t.Errorf("Requirements(docker) without its package = %+v; want one missing requirement naming the import", rs)
	}
	if _, err := Start(context.Background(), Spec{Topology: RedisSingle, Backend: "podman"}); !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("Start on an unknown backend: %v; want ErrBadSpec", err)
	}
}

// TestExternalNotLinked: nor do they import cluster/external: Start refuses the external backend
// in one ErrBadSpec line naming the import, also with servers off (it starts none), and
// Requirements says the same with the fix.
func TestExternalNotLinked(t *testing.T) {
	t.Setenv(NoServers, "1")
	f, err := ParseExternal([]byte("nodes:\n  - {name: redis-1, kind: redis, address: 127.0.0.1:1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), Spec{Topology: RedisSingle, Backend: External, External: f})
	if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), `import _ "github.com/lockchaos/lockchaos/cluster/external"`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("Start on external without its package: %v; want one ErrBadSpec line naming the import", err)
	}
	rs := Requirements(External)
	if len(rs) != 1 || rs[0].OK || !strings.Contains(rs[0].Fix, "cluster/external") {
		t.Errorf("Requirements(external) without its package = %+v; want one missing requirement naming the import", rs)
	}
}
