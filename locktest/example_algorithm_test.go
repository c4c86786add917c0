package locktest_test

import (
	"testing"

	"github.com/lockchaos/lockchaos/locktest"
)

// What a caught bug looks like: token-plain-del is the token lock with its owner check removed
// (a plain DEL on release). Run points at it like at your own lock; its slow-release subtest
// fails with the verdict, the late DEL that removed the next holder's key, and the report's path.
func ExampleAlgorithm() {
	TestMutant := func(t *testing.T) {
		locktest.Run(t, locktest.Algorithm("token-plain-del"), locktest.WithScenarios("slow-release"))
		// --- FAIL: TestMutant/slow-release
		//     slow-release: verdict unsafe (service class), expected safe — 28 illegal grants
		//     (client 4 granted at 1.42 s while client 1's lease ran to 1.78 s; client 2's release
		//     (op 20, of its acq 17), invoked at 621 ms and answered at 1.42 s, removed client 1's
		//     key), 25 overlapping holders, 12 lost updates; TTD 1420 ms ... report: .../report.html
	}
	_ = TestMutant
}
