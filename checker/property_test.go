package checker

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// A correct lock never yields a violation, whatever the interleaving of waiting clients.
func TestPropertyCorrectLockIsSafe(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 60 {
		cfg := genConfig{Clients: 1 + rng.IntN(8), Ops: 40 + rng.IntN(2000), TTL: time.Duration(1+rng.IntN(5)) * time.Millisecond,
			Seed: rng.Uint64(), Noise: rng.IntN(2) == 0}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			r := CheckHistory(generate(cfg), Options{}).Result
			want := Safe
			if cfg.Clients == 1 {
				// One client contends with nobody: the run could not have failed (docs/design.md#evidence).
				want = Unknown
				if !strings.Contains(r.Evidence, "only one client") {
					t.Errorf("evidence %q, want it to say only one client was granted", r.Evidence)
				}
			}
			if r.Verdict != want || r.ExclusionViolations+r.ServiceViolations+r.LostUpdates != 0 {
				t.Fatalf("%+v: verdict %s excl %d svc %d lost %d first %+v lock %s res %s", cfg, r.Verdict,
					r.ExclusionViolations, r.ServiceViolations, r.LostUpdates, r.FirstViolation, r.LockCheck.Result, r.ResourceCheck.Result)
			}
		})
	}
}

// One injected overlap is always caught, and classified by its cause.
func TestPropertyInjectedOverlapCaught(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 80 {
		kind := injectClient
		want := ClientClass
		if i%2 == 1 {
			kind, want = injectService, ServiceClass
		}
		cfg := genConfig{Clients: 2 + rng.IntN(7), Ops: 40 + rng.IntN(2000), TTL: time.Duration(1+rng.IntN(5)) * time.Millisecond,
			Seed: rng.Uint64(), Inject: kind, Noise: rng.IntN(2) == 0}
		cfg.InjectAt = rng.IntN(cfg.Ops / 4)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			r := CheckHistory(generate(cfg), Options{}).Result
			if r.Verdict != Unsafe || r.ViolationClass == nil || *r.ViolationClass != want || r.ExclusionViolations != 1 {
				t.Fatalf("%+v: verdict %s class %v excl %d svc %d first %+v", cfg, r.Verdict, r.ViolationClass,
					r.ExclusionViolations, r.ServiceViolations, r.FirstViolation)
			}
			if kind == injectService && r.ServiceViolations != 1 {
				t.Fatalf("service_violations %d, want 1", r.ServiceViolations)
			}
			if kind == injectClient && (r.ServiceViolations != 0 || r.LockCheck.Result != "Ok") {
				t.Fatalf("service_violations %d lock %s, want 0 and Ok", r.ServiceViolations, r.LockCheck.Result)
			}
			if r.LostUpdates != 1 || r.ResourceCheck.Result != "Illegal" {
				t.Fatalf("lost_updates %d resource %s, want 1 and Illegal", r.LostUpdates, r.ResourceCheck.Result)
			}
		})
	}
}

// A check that runs out of time is unknown, never safe.
func TestCheckerTimeoutIsUnknown(t *testing.T) {
	h := generate(genConfig{Clients: 50, Ops: 40000, TTL: time.Second, Seed: 9, Noise: true})
	r := CheckHistory(h, Options{Timeout: time.Nanosecond}).Result
	if r.Verdict != Unknown {
		t.Fatalf("verdict %s (lock %s, resource %s), want unknown", r.Verdict, r.LockCheck.Result, r.ResourceCheck.Result)
	}
	if r.LockCheck.Result != "Unknown" && r.ResourceCheck.Result != "Unknown" {
		t.Fatalf("no check timed out: lock %s resource %s", r.LockCheck.Result, r.ResourceCheck.Result)
	}
	if len(r.Warnings) == 0 {
		t.Fatalf("no warning about the timeout")
	}
}

// A run stops early once the history so far is unsafe (the runner's Decide): that is sound only
// if no prefix of a history is unsafe unless the whole history is. Cut where a run can be cut —
// any line, with the operations under way left without their completions — a correct lock's
// history is never unsafe, and a prefix of an unsafe one that is unsafe finds the same class.
func TestPropertyPrefixUnsafeOnlyIfWholeIs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	unsafePrefixes := 0
	for i := range 40 {
		cfg := genConfig{Clients: 2 + rng.IntN(7), Ops: 40 + rng.IntN(600), TTL: time.Duration(1+rng.IntN(5)) * time.Millisecond,
			Seed: rng.Uint64(), Noise: rng.IntN(2) == 0}
		switch i % 3 {
		case 1:
			cfg.Inject = injectClient
		case 2:
			cfg.Inject = injectService
		}
		if cfg.Inject != 0 {
			cfg.InjectAt = rng.IntN(cfg.Ops / 4)
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			h := generate(cfg)
			whole := CheckHistory(h, Options{}).Result
			for range 12 {
				cut := rng.IntN(len(h.Events) + 1)
				prefix := &history.History{Meta: h.Meta, Events: h.Events[:cut:cut]}
				r := CheckHistory(prefix, Options{}).Result
				if r.Verdict != Unsafe {
					continue
				}
				unsafePrefixes++
				if whole.Verdict != Unsafe {
					t.Fatalf("%+v: the first %d of %d lines are unsafe (%s), the whole history is %s", cfg, cut, len(h.Events), r.DecidedBy, whole.Verdict)
				}
				if *r.ViolationClass != *whole.ViolationClass {
					t.Fatalf("%+v: the first %d lines find a %s violation, the whole history %s", cfg, cut, *r.ViolationClass, *whole.ViolationClass)
				}
			}
		})
	}
	if unsafePrefixes < 20 {
		t.Fatalf("only %d prefixes were unsafe: the property was hardly tested", unsafePrefixes)
	}
}
