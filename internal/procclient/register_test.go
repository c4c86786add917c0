package procclient

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/algorithms/process"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestShippedManifests: every shipped manifest loads and registers; its expectations reach the
// catalogue's cells, and a ZooKeeper client gets the zookeeper family's variants (the longer pause).
func TestShippedManifests(t *testing.T) {
	if err := RegisterDir("../../clients"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"redis-py", "kazoo", "kazoo-bare", "curator", "curator-bare", "python-etcd3"} {
		if _, err := algorithms.Lookup(name); err != nil {
			t.Errorf("%s not registered: %v", name, err)
		}
	}
	pause, err := scenarios.Lookup("client-pause")
	if err != nil {
		t.Fatal(err)
	}
	// The pause is sized in leases of the lock under test: at the session's 1 s (ZooKeeper) and
	// the TTL's 500 ms (Redis) it lasts at least what it always lasted; on Redis it then goes on
	// until another client holds (at-least, until).
	for alg, lw := range map[string][2]time.Duration{"kazoo": {time.Second, 2 * time.Second}, "curator": {time.Second, 2 * time.Second},
		"redis-py": {500 * time.Millisecond, 900 * time.Millisecond}} {
		lease, want := lw[0], lw[1]
		c, err := pause.Cell(alg)
		if err != nil {
			t.Fatal(err)
		}
		if c.Expected != "unsafe-client" {
			t.Errorf("%s × client-pause expects %q, want unsafe-client (from its manifest)", alg, c.Expected)
		}
		if len(c.Faults) != 1 {
			t.Fatalf("%s × client-pause faults %+v, want one pause", alg, c.Faults)
		}
		f := c.Faults[0]
		floor := f.For
		if f.Until != "" {
			floor = f.AtLeast
		}
		if got := floor.Resolve(lease, c.Lock.Renews); got != want {
			t.Errorf("%s × client-pause faults %+v, want one pause of at least %v, got %v", alg, c.Faults, want, got)
		}
	}
	if err := RegisterDir("../../clients"); err != nil {
		t.Errorf("registering the same manifests twice: %v, want a no-op", err)
	}
}

// TestShippedSQLClient: a client on postgres takes the sql family's variants (slow-release at the
// harness's point, not on RESP commands), runs on postgres-pgbouncer too (also_on), and a client
// whose manifest says nothing of clock-skew is n/a there, with the reason; a client on Redis
// is n/a in the SQL scenarios.
func TestShippedSQLClient(t *testing.T) {
	if err := RegisterDir("../../clients"); err != nil {
		t.Fatal(err)
	}
	info, err := algorithms.Lookup("psycopg2-advisory")
	if err != nil {
		t.Fatal(err)
	}
	if f := scenarios.Family(info); f != "sql" {
		t.Errorf("psycopg2-advisory's family %q, want sql", f)
	}
	if !slices.Contains(info.Topologies, "postgres-pgbouncer") {
		t.Errorf("psycopg2-advisory runs on %v, want postgres-pgbouncer among them", info.Topologies)
	}
	slow, err := scenarios.Lookup("slow-release")
	if err != nil {
		t.Fatal(err)
	}
	c, err := slow.Cell("psycopg2-advisory")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Faults) != 1 || c.Faults[0].Wire != nil || c.Faults[0].Point != "cs:before-release" {
		t.Errorf("psycopg2-advisory × slow-release faults %+v, want the sql family's one at cs:before-release", c.Faults)
	}
	skew, err := scenarios.Lookup("clock-skew")
	if err != nil {
		t.Fatal(err)
	}
	kill, err := scenarios.Lookup("session-kill")
	if err != nil {
		t.Fatal(err)
	}
	for alg, na := range map[string]bool{"redis-py": true, "kazoo": true, "psycopg2-advisory": false} {
		c, err := kill.Cell(alg)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.NA != ""; got != na {
			t.Errorf("%s × session-kill n/a %v (%q), want %v", alg, got, c.NA, na)
		}
	}
	// clock-skew reaches a process client through libfaketime (installed by make deps): no shipped
	// client is n/a there.
	if process.FaketimeLib() == "" {
		testenv.Missing(t, testenv.RequireServers, "libfaketime is not installed (make deps)")
	}
	for _, alg := range []string{"redis-py", "kazoo", "curator", "psycopg2-advisory", "userlock", "tooz-redis"} {
		c, err := skew.Cell(alg)
		if err != nil {
			t.Fatal(err)
		}
		if c.NA != "" {
			t.Errorf("%s × clock-skew n/a (%q), want it run (libfaketime moves the process's clock)", alg, c.NA)
		}
	}
}

// TestClockSkewNA: clock-skew is n/a, with the reason, for a client whose manifest says clock: none
// and for any client where libfaketime is not installed — unless its manifest says what it measured.
func TestClockSkewNA(t *testing.T) {
	skew, err := scenarios.Lookup("clock-skew")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, extra string) string {
		p := filepath.Join(dir, name+".yaml")
		body := "name: " + name + "\ncommand: [/bin/true]\ntopology: redis-single\n" + extra
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	none := write("clock-none-client", "clock: none\n")
	measured := write("clock-measured-client", "clock: none\nexpect:\n  clock-skew: {verdict: S}\n")
	t.Setenv("LOCKCHAOS_FAKETIME_LIB", "")
	nolib := write("no-faketime-client", "")
	for path, want := range map[string]string{none: "clock: none", nolib: "libfaketime", measured: ""} {
		name, err := RegisterFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := skew.Cell(name)
		if err != nil {
			t.Fatal(err)
		}
		if (want == "") != (c.NA == "") || !strings.Contains(c.NA, want) {
			t.Errorf("%s × clock-skew n/a %q, want %q in it (\"\" = run)", name, c.NA, want)
		}
	}
	if _, err := RegisterFile(write("bad-clock-client", "clock: sometimes\n")); err == nil || !strings.Contains(err.Error(), "want faketime") {
		t.Errorf("clock: sometimes: %v, want an error naming the values", err)
	}
}

// TestRenews: a manifest's renews reaches the algorithm's Info (tooz's heartbeat thread, kazoo's
// session pings); a client that renews nothing has none; a negative period is an error.
func TestRenews(t *testing.T) {
	if err := RegisterDir("../../clients"); err != nil {
		t.Fatal(err)
	}
	for alg, want := range map[string]time.Duration{"tooz-redis": 500 * time.Millisecond, "kazoo": 333 * time.Millisecond, "redis-py": 0} {
		info, err := algorithms.Lookup(alg)
		if err != nil {
			t.Fatal(err)
		}
		if info.Renews != want {
			t.Errorf("%s: Info.Renews %v, want %v (its manifest's renews)", alg, info.Renews, want)
		}
	}
	p := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(p, []byte("name: bad-renews\ncommand: [/bin/true]\ntopology: redis-single\nrenews: -1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RegisterFile(p); err == nil || !strings.Contains(err.Error(), "renews") {
		t.Errorf("renews: -1s: %v, want an error naming renews", err)
	}
}

// TestManifestExpectations: a manifest's expectations are the user's input — one its topology
// cannot show, or expect_on a topology it does not run on, is an error naming it (exit 254 at the
// command line), never a panic, and leaves the client unregistered; expect_on gives the client's
// column on one of its also_on topologies.
func TestManifestExpectations(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte("name: "+name+"\ncommand: [/bin/true]\nsupports: {valid: true, lost: false}\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct{ name, body, want string }{
		{"exp-cannot-show", "topology: redis-single\nexpect:\n  session-kill: {verdict: S}\n", "no sessions the harness can end"},
		{"exp-on-elsewhere", "topology: postgres\nexpect_on:\n  postgres-standby:\n    failover: {verdict: Us}\n", "not one of also_on"},
		{"exp-on-cannot-show", "topology: postgres\nalso_on: [postgres-standby]\nexpect_on:\n  postgres-standby:\n    pgbouncer-transaction: {verdict: Us}\n", "expect_on.postgres-standby"},
	} {
		_, err := RegisterFile(write(tc.name, tc.body))
		if !errors.Is(err, process.ErrBadManifest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a bad manifest naming %q", tc.name, err, tc.want)
		}
		if _, err := algorithms.Lookup(tc.name); err == nil {
			t.Errorf("%s: registered despite its bad expectations", tc.name)
		}
	}
	name, err := RegisterFile(write("exp-on-standby", "topology: postgres\nalso_on: [postgres-standby]\nexpect:\n  failover: {verdict: \"-\", note: one server}\n"+
		"expect_on:\n  postgres-standby:\n    failover: {verdict: Us, note: the promoted standby holds no advisory lock}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := must(t, "failover").CellOn(name, "postgres-standby")
	if err != nil || c.Expected != "unsafe-service" {
		t.Errorf("%s × failover on postgres-standby: %q (%v), want unsafe-service from expect_on", name, c.Expected, err)
	}
}

func must(t *testing.T, scenario string) scenarios.Scenario {
	t.Helper()
	s, err := scenarios.Lookup(scenario)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
