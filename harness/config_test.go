package harness

import (
	"testing"
	"time"
)

// TestReleaseTimeoutDefault: a release is bounded by the acquire timeout unless the workload gives
// it its own.
func TestReleaseTimeoutDefault(t *testing.T) {
	for _, tc := range []struct {
		w                Workload
		acquire, release time.Duration
	}{
		{Workload{TTL: time.Second}, 2 * time.Second, 2 * time.Second},
		{Workload{TTL: time.Second, AcquireTimeout: 300 * time.Millisecond}, 300 * time.Millisecond, 300 * time.Millisecond},
		{Workload{TTL: time.Second, AcquireTimeout: 300 * time.Millisecond, ReleaseTimeout: 3 * time.Second}, 300 * time.Millisecond, 3 * time.Second},
	} {
		c, _, err := Config{Algorithm: "token", Dir: t.TempDir(), Workload: tc.w}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if c.AcquireTimeout != tc.acquire || c.ReleaseTimeout != tc.release {
			t.Errorf("%+v: acquire %v release %v, want %v %v", tc.w, c.AcquireTimeout, c.ReleaseTimeout, tc.acquire, tc.release)
		}
	}
}
