package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/exttest"
)

// externalMatrix runs a matrix of algorithms × scenarios on the external backend's cluster file
// into dir/out, fails t on a usage or harness error, and returns its cells (matrixCells).
func externalMatrix(t *testing.T, file, dir, algorithms, scenarios string) map[string][2]string {
	t.Helper()
	out := filepath.Join(dir, "out")
	code, stdout, stderr := lockchaos(t, "matrix", "--algorithms", algorithms, "--scenarios", scenarios,
		"--backend", "external", "--cluster", file, "--seed", "1", "--out", out, "--quiet")
	if code == exitUsage || code == exitHarness {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	return matrixCells(t, out)
}

// matrixCells reads a matrix's results.json: each cell's verdict and its error or n/a reason, by
// "algorithm × scenario".
func matrixCells(t *testing.T, out string) map[string][2]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Results []struct {
			Algorithm, Scenario, Verdict, Error, NA string
			Result                                  *struct {
				DecidedBy string `json:"decided_by"`
			}
		}
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	got := map[string][2]string{}
	for _, c := range res.Results {
		why := c.Error + c.NA
		if c.Result != nil {
			why += c.Result.DecidedBy
		}
		got[c.Algorithm+" × "+c.Scenario] = [2]string{c.Verdict, why}
	}
	return got
}

// externalSQL starts a SQL server of topology apart from the run under test (to lockchaos only an
// address) and a toxiproxy-server, and writes a cluster file naming the server as node, of kind,
// with the YAML lines extra; it returns the server's address, the toxiproxy API, the file and a
// directory for the runs.
func externalSQL(t *testing.T, topology, node, kind, extra string) (addr, tp, file, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs against real servers")
	}
	addr = exttest.StartLocal(t, topology)[0].Addr
	tp = exttest.Toxiproxy(t)
	dir = t.TempDir()
	file = exttest.WriteClusterFile(t, dir, exttest.Node{Name: node, Kind: kind, Address: addr, Toxiproxy: tp, Extra: extra})
	return addr, tp, file, dir
}

// TestExternalPostgres: a PostgreSQL someone else runs, named in a cluster file with the login
// its clients use: pg-advisory is safe in the baseline and unsafe when the server ends the
// holder's session (session-kill finds the run's own sessions by their run-tagged
// application_name, and leaves another's tagged lockchaos-client-N alone); the runs leave no proxy on the toxiproxy-server, and pg-lease's no lease
// row in the server's table. The server here is a local PostgreSQL started apart from the
// run under test: to lockchaos it is only an address.
func TestExternalPostgres(t *testing.T) {
	t.Setenv("LOCKCHAOS_TEST_PG_PASSWORD", "not checked: the server trusts 127.0.0.1")
	pg, tp, file, dir := externalSQL(t, cluster.Postgres, "pg-1", "postgres", "user: postgres\n    password_env: LOCKCHAOS_TEST_PG_PASSWORD")
	if code, stdout, _ := lockchaos(t, "doctor", "--cluster", file); code != exitValid || !strings.Contains(stdout, "ok          node pg-1 (postgres)") {
		t.Errorf("doctor --cluster: exit %d\n%s", code, stdout)
	}
	// A login the server refuses is bad input, one line, before anything starts.
	bad := exttest.WriteClusterFile(t, t.TempDir(), exttest.Node{Name: "pg-1", Kind: "postgres", Address: pg, Toxiproxy: tp,
		Extra: "database: no_such_db"})
	code, _, stderr := lockchaos(t, "run", "--algorithm", "pg-advisory", "--scenario", "baseline", "--backend", "external",
		"--cluster", bad, "--out", filepath.Join(dir, "bad"))
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := lines[len(lines)-1]; code != exitUsage || !strings.Contains(last, "node pg-1 (postgres)") || !strings.Contains(last, "no_such_db") ||
		!strings.Contains(last, "check its kind, and a SQL server's user, password, database") {
		t.Errorf("a database the server does not have: exit %d, stderr %q; want 254 and one line naming it", code, stderr)
	}
	// Sessions of someone else on the same server, tagged as a local run's clients are (the tag
	// session-kill used before it carried the run id): the run must end only its own.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var others []*pgx.Conn
	for c := 1; c <= 5; c++ {
		conn, err := pgx.Connect(ctx, cluster.PostgresURL(pg, cluster.ClientAppName(c)))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		others = append(others, conn)
	}
	got := externalMatrix(t, file, dir, "pg-advisory", "baseline,session-kill")
	for i, conn := range others {
		if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
			t.Errorf("a session tagged %s, not the run's, was ended: %v", cluster.ClientAppName(i+1), err)
		}
	}
	// pg-lease writes rows, which the run must remove.
	code, stdout, stderr := lockchaos(t, "run", "--algorithm", "pg-lease", "--scenario", "baseline",
		"--backend", "external", "--cluster", file, "--seed", "1", "--out", filepath.Join(dir, "lease"), "--quiet")
	if code == exitUsage || code == exitHarness {
		t.Fatalf("pg-lease: exit %d\n%s%s", code, stdout, stderr)
	}
	for cell, want := range map[string]string{"pg-advisory × baseline": "safe", "pg-advisory × session-kill": "unsafe-service"} {
		if got[cell][0] != want {
			t.Errorf("%s: %s (%s), want %s", cell, got[cell][0], got[cell][1], want)
		}
	}
	if left := exttest.Proxies(t, tp, cluster.ProxyPrefix); len(left) > 0 {
		t.Errorf("proxies left on the toxiproxy-server: %v", left)
	}
	conn, err := pgx.Connect(ctx, cluster.PostgresURL(pg, "test"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM lockchaos_leases").Scan(&rows); err != nil {
		t.Fatalf("pg-lease's table: %v", err)
	}
	if rows != 0 {
		t.Errorf("%d lease rows left in the server's table, want the runs' rows removed", rows)
	}
}

// TestExternalMariaDB: a MariaDB someone else runs: mysql-get-lock logs in as the cluster file's
// user and is safe in the baseline; session-kill, which cannot tell clients that share one user
// apart, is unknown and says why instead of ending another client's session.
func TestExternalMariaDB(t *testing.T) {
	_, _, file, dir := externalSQL(t, cluster.MariaDB, "mariadb-1", "mariadb", "user: app")
	got := externalMatrix(t, file, dir, "mysql-get-lock", "baseline,session-kill")
	if c := got["mysql-get-lock × baseline"]; c[0] != "safe" {
		t.Errorf("baseline: %s (%s), want safe", c[0], c[1])
	}
	if c := got["mysql-get-lock × session-kill"]; c[0] != "unknown" || !strings.Contains(c[1], "share the cluster file's user") {
		t.Errorf("session-kill: %s (%s), want unknown saying the clients' sessions cannot be told apart", c[0], c[1])
	}
}
