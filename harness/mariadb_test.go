package harness_test

import (
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/faults"
)

// TestMariaDBCells runs mysql-get-lock's baseline and flagship cells against a real MariaDB: the
// lock is safe alone, with evidence; the session-kill fault catches the holder that trusts its
// GET_LOCK without asking the server, where the careful one writes nothing after it lost the lock.
func TestMariaDBCells(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	// At the second grant, as the catalogue's session-kill on mariadb (scenarios/expect_mariadb.go):
	// the waiters are queued in the server by then.
	kill := []faults.Spec{{Kind: "session-kill", Point: "cs:acquired", Skip: 1}}
	runSQLCells(t, []sqlCell{
		{name: "baseline/mysql-get-lock", alg: "mysql-get-lock", want: checker.Safe},
		{name: "session-kill/mysql-get-lock", alg: "mysql-get-lock", faults: kill, want: checker.Unsafe, check: askedAndDidNotWrite},
		{name: "session-kill/mysql-get-lock-no-valid", alg: "mysql-get-lock-no-valid", faults: kill, want: checker.Unsafe,
			check: wroteIntoTheNextLock},
	})
}
