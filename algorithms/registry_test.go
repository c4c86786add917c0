package algorithms_test

import (
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
)

// TestRenewalPeriod: the locks that renew their lease in the background say at what period, so
// a pause that must outlast their lease outlasts a renewal too; a lock that renews nothing says 0.
func TestRenewalPeriod(t *testing.T) {
	const ttl = 600 * time.Millisecond
	for name, want := range map[string]time.Duration{
		"token+watchdog":         ttl / 3,
		"token-watchdog-blind":   ttl / 3,
		"bsm-redislock-refresh":  ttl / 3,
		"user-token-renew":       ttl / 3,
		"user-token-blind-renew": ttl / 3,
		"rueidislock":            ttl / 2, // ExtendInterval: KeyValidity/2
		"token":                  0,
		"bsm-redislock":          0,
	} {
		info, err := algorithms.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.RenewalPeriod(ttl); got != want {
			t.Errorf("%s: RenewalPeriod(%v) = %v, want %v", name, ttl, got, want)
		}
	}
	if got := (algorithms.Info{Renews: time.Second, RenewsPerTTL: 0.5}).RenewalPeriod(ttl); got != time.Second {
		t.Errorf("an absolute Renews wins over RenewsPerTTL: got %v, want 1s", got)
	}
}
