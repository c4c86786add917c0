package checker

import (
	"strings"
	"testing"
	"time"
)

// A long history is checked in batches and visualized around its first violation only: the
// porcupine page of a 10-minute run stays small, and shows what went wrong.
func TestLongHistoryVisualizedAroundViolation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("generates 120000 operations")
	}
	for _, tc := range []struct {
		name string
		cfg  genConfig
	}{
		{"unsafe", genConfig{Clients: 5, Ops: 120_000, TTL: time.Second, Seed: 4, Inject: injectService, InjectAt: 22_000}},
		{"safe", genConfig{Clients: 5, Ops: 120_000, TTL: time.Second, Seed: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := CheckHistory(generate(tc.cfg), Options{})
			r := &out.Result
			for _, c := range []struct {
				what  string
				lin   *Linearization
				check Check
			}{{"lock", out.Lock, r.LockCheck}, {"resource", out.Resource, r.ResourceCheck}} {
				lo, hi := c.lin.window[0], c.lin.window[1]
				if c.check.Visualized == "" || hi <= lo || hi-lo > visualizeMax || c.lin.ops != nil {
					t.Fatalf("%s check: visualized %q, window [%d, %d), ops kept: %d", c.what, c.check.Visualized, lo, hi, len(c.lin.ops))
				}
				if tc.cfg.Inject == injectNone {
					if lo != 0 || !strings.Contains(c.check.Visualized, "from the start") {
						t.Errorf("%s check of a safe run: window [%d, %d), %q; want the start", c.what, lo, hi, c.check.Visualized)
					}
					continue
				}
				at := int64(r.FirstViolation.AtMs * float64(time.Millisecond))
				if first, last := c.lin.span[0], c.lin.span[1]; at < first || at > last || lo == 0 {
					t.Errorf("%s check: window [%d, %d) spans %d–%d ns, the first violation is at %d ns", c.what, lo, hi, first, last, at)
				}
			}
			if tc.cfg.Inject == injectService && (r.Verdict != Unsafe || r.LockCheck.Result != "Illegal") {
				t.Fatalf("verdict %s, lock check %s; want unsafe, Illegal", r.Verdict, r.LockCheck.Result)
			}
			if tc.cfg.Inject == injectNone && r.Verdict == Unsafe {
				t.Fatalf("a correct lock's history is unsafe: %+v", r.FirstViolation)
			}
		})
	}
}
