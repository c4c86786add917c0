package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseExternal(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		topology   string // want this topology, or
		err        string // an error containing this
	}{
		{name: "redis-single", yaml: "nodes:\n  - {name: r1, kind: redis, address: 10.0.0.1:6379, toxiproxy: 10.0.0.1:8474}\n", topology: RedisSingle},
		{name: "redis-multi", yaml: "nodes:\n  - {name: r1, kind: redis, address: a:1}\n  - {name: r2, kind: redis, address: b:1}\n  - {name: r3, kind: redis, address: c:1}\n", topology: RedisMulti},
		{name: "zookeeper-3", yaml: "nodes:\n  - {name: z1, kind: zookeeper, address: a:2181}\n  - {name: z2, kind: zookeeper, address: b:2181}\n  - {name: z3, kind: zookeeper, address: c:2181}\n", topology: ZooKeeper},
		{name: "etcd-1", yaml: "nodes:\n  - {name: e1, kind: etcd, address: a:2379}\n", topology: Etcd},
		{name: "unknown field", yaml: "nodes:\n  - name: r1\n    kind: redis\n    adress: a:1\n", err: "line 4: field adress not found"},
		{name: "unknown top field", yaml: "nodez: []\n", err: "line 1: field nodez not found"},
		{name: "unknown kind", yaml: "nodes:\n  - name: r1\n    kind: mysql\n    address: a:1\n", err: `line 2: node r1: unknown kind "mysql" (use etcd, mariadb, postgres, redis, sentinel or zookeeper)`},
		{name: "postgres", yaml: "nodes:\n  - {name: pg-1, kind: postgres, address: a:5432, user: app, password: 's3 cr/et'}\n", topology: Postgres},
		{name: "mariadb", yaml: "nodes:\n  - {name: m1, kind: mariadb, address: a:3306, user: app}\n", topology: MariaDB},
		{name: "mariadb without user", yaml: "nodes:\n  - {name: m1, kind: mariadb, address: a:3306}\n", err: "line 2: node m1: no user (add user:"},
		{name: "two postgres", yaml: "nodes:\n  - {name: p1, kind: postgres, address: a:1}\n  - {name: p2, kind: postgres, address: b:1}\n", err: "2 postgres nodes (list the one server"},
		{name: "login on redis", yaml: "nodes:\n  - {name: r1, kind: redis, address: a:1, user: app}\n", err: "are for mariadb and postgres nodes"},
		{name: "password twice", yaml: "nodes:\n  - {name: p1, kind: postgres, address: a:1, password: x, password_env: HOME}\n", err: "password and password_env both set"},
		{name: "password_env unset", yaml: "nodes:\n  - {name: p1, kind: postgres, address: a:1, password_env: LOCKCHAOS_TEST_UNSET_PW}\n", err: "password_env LOCKCHAOS_TEST_UNSET_PW is not set (export"},
		{name: "bad sslmode", yaml: "nodes:\n  - {name: p1, kind: postgres, address: a:1, sslmode: maybe}\n", err: `sslmode "maybe"`},
		{name: "sentinel", yaml: "nodes:\n  - {name: r1, kind: redis, address: a:1}\n  - {name: r2, kind: redis, address: b:1}\n  - {name: s1, kind: sentinel, address: a:2}\n", topology: RedisSentinel},
		{name: "sentinels only", yaml: "nodes:\n  - {name: s1, kind: sentinel, address: a:1}\n", err: "only sentinel nodes (list the redis nodes"},
		{name: "mixed", yaml: "nodes:\n  - {name: r1, kind: redis, address: a:1}\n  - {name: z1, kind: zookeeper, address: a:2}\n", err: "mix kinds [redis zookeeper]"},
		{name: "even zookeeper", yaml: "nodes:\n  - {name: z1, kind: zookeeper, address: a:1}\n  - {name: z2, kind: zookeeper, address: a:2}\n", err: "2 zookeeper nodes"},
		{name: "no port", yaml: "nodes:\n  - {name: r1, kind: redis, address: a}\n", err: `address "a"`},
		{name: "bad api", yaml: "nodes:\n  - {name: r1, kind: redis, address: a:1, toxiproxy: x}\n", err: `toxiproxy "x"`},
		{name: "duplicate", yaml: "nodes:\n  - {name: r1, kind: redis, address: a:1}\n  - {name: r1, kind: redis, address: b:1}\n", err: "line 3: node r1: name used twice"},
		{name: "pause alone", yaml: "nodes:\n  - {name: r1, kind: redis, address: a:1, pause: 'kill -STOP 1'}\n", err: "pause and resume go together"},
		{name: "bad timeout", yaml: "command_timeout: soon\nnodes:\n  - {name: r1, kind: redis, address: a:1}\n", err: `command_timeout "soon"`},
		{name: "empty", yaml: "", err: "empty file"},
		{name: "no nodes", yaml: "nodes: []\n", err: "no nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseExternal([]byte(tc.yaml))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := f.Topology(); got != tc.topology {
				t.Errorf("topology %s, want %s", got, tc.topology)
			}
		})
	}
}

// TestExternalSQLLogin: a SQL node's login takes PostgreSQL's defaults (user postgres, its
// database the user's name, sslmode disable), a password from the variable password_env names,
// and escapes every part of the URL the clients connect with.
func TestExternalSQLLogin(t *testing.T) {
	t.Setenv("LOCKCHAOS_TEST_PW", "p@ss word/?")
	f, err := ParseExternal([]byte("nodes:\n  - {name: pg-1, kind: postgres, address: db:5432, password_env: LOCKCHAOS_TEST_PW}\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := f.Nodes[0].Login()
	if want := (SQLLogin{User: "postgres", Password: "p@ss word/?", Database: "postgres", SSLMode: "disable"}); l != want {
		t.Errorf("login %+v, want %+v", l, want)
	}
	l.AppName = "lockchaos-x-client-1"
	if got, want := l.PostgresURL("db:5432"), "postgres://postgres:p%40ss%20word%2F%3F@db:5432/postgres?application_name=lockchaos-x-client-1&connect_timeout=2&sslmode=disable"; got != want {
		t.Errorf("URL %s, want %s", got, want)
	}
}

func TestLoadExternalBadInput(t *testing.T) {
	_, err := LoadExternal(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v, want ErrBadSpec naming the file", err)
	}
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("nodes:\n  - {name: r1, kind: redis, address: a:1, colour: red}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadExternal(p)
	if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "line 2: field colour not found") {
		t.Errorf("unknown field: %v, want ErrBadSpec with the file and line", err)
	}
}

func TestExternalMissing(t *testing.T) {
	f, err := ParseExternal([]byte("nodes:\n  - {name: r1, kind: redis, address: a:1, toxiproxy: a:8474, kill: 'true'}\n  - {name: r2, kind: redis, address: b:1, restart: 'true', pause: 'true', resume: 'true'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	f.Path = "c.yaml"
	for _, tc := range []struct {
		node string
		ctl  Control
		err  string // "" = has it
	}{
		{"r1", ControlLinks, ""},
		{"r1", ControlKill, ""},
		{"r1", ControlRestart, "node r1 has no restart in cluster file c.yaml (add restart:"},
		{"r1", ControlPause, "node r1 has no pause in cluster file c.yaml (add pause: and resume:"},
		{"r2", ControlLinks, "node r2 has no toxiproxy in cluster file c.yaml (add toxiproxy: HOST:8474"},
		{"r2", ControlKill, "node r2 has no kill"},
		{"r2", ControlRestart, ""},
		{"r2", ControlPause, ""},
		{"r1", ControlReplication, "cannot cut an external cluster's replication"},
	} {
		err := f.Missing(tc.node, tc.ctl)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s %s: %v, want none", tc.node, tc.ctl, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %s: %v, want %q", tc.node, tc.ctl, err, tc.err)
		}
	}
}
