package checker

import (
	"testing"
	"time"
)

// TestNoAccessNoOverlap: an acquisition whose holder never touched the resource (its lease had
// run out when Acquire returned, so a careful client skipped its critical section) has a point
// window; it must not count as an exclusion violation inside another holder's window.
func TestNoAccessNoOverlap(t *testing.T) {
	b := newHB("token", 100*time.Millisecond)
	late := b.acquire(2, 0, 130) // granted at once, returned after its lease ran
	b.release(2, late, 131, 132)
	a := b.acquire(1, 105, 106) // granted after client 2's lease expired
	b.read(1, a, 107, 108, 0)
	b.write(1, a, 200, 201, 1)
	b.release(1, a, 202, 203)
	for i := range 10 {
		b.value = int64(i + 1)
		b.cs(i%3+1, float64(300+i*10))
	}
	res := CheckHistory(b.history(), Options{}).Result
	if res.ExclusionViolations != 0 {
		t.Errorf("exclusion violations %d, want 0: client 2 never used the resource", res.ExclusionViolations)
	}
}
