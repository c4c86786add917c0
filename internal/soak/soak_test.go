package soak_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/soak"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestMain silences go-redis: under injected faults its failed dials are expected.
func TestMain(m *testing.M) {
	testenv.QuietRedis()
	os.Exit(m.Run())
}

// soaked runs a soak against real servers.
func soaked(t *testing.T, o soak.Options) *soak.Report {
	t.Helper()
	testenv.Servers(t)
	if o.Out == "" {
		o.Out = t.TempDir()
	}
	var log bytes.Buffer
	o.Log = &log
	start := time.Now()
	rep, err := soak.Run(context.Background(), o)
	t.Logf("%s in %s:\n%s", o.Algorithms, time.Since(start).Round(time.Second), log.String())
	if errors.Is(err, cluster.ErrMissingBinary) {
		testenv.MissingServer(t, err)
	}
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, f := range []string{soak.HTMLFile, soak.JSONFile, soak.PlanJSON} {
		if _, err := os.Stat(filepath.Join(o.Out, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
	return rep
}

// firstRules are the plan's faults (rules) open at an algorithm's first violation.
func firstRules(a soak.AlgorithmResult) []int {
	var out []int
	for _, g := range a.Groups {
		if g.First.AtMs != a.First.AtMs {
			continue
		}
		for _, f := range g.Faults {
			if !slices.Contains(out, f.Rule) {
				out = append(out, f.Rule)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestSoakFindsReplaysEmits: a soak of setnx-px (a plain DEL releases whatever key is there) under
// late releases finds it unsafe without being aimed, names the faults, sees it live; its plan is a
// scenario file; a replay of the plan breaks the lock under the same faults first; and the first
// violation's faults, emitted and shrunk, break it again on their own.
//
// Late releases only: each is held until another client holds the lock, so the plain DEL lands
// on a holder's key every time it fires. Client pauses in the mix made the test a coin toss (CI,
// twice): a holder paused before its release past the lease deletes a later holder's key only if
// one holds at the instant it wakes, and a third acquires within that holder's 10 ms — the first
// violation came under such a pause, and its replay, or the two runs of its emitted probe, missed.
// Seed 7 draws seven late releases in the 15 s (the mean at 30 a minute is 6.5); seed 5 drew three
// once the plan drew for second faults too, and the lock came out safe under them.
func TestSoakFindsReplaysEmits(t *testing.T) {
	out := t.TempDir()
	rep := soaked(t, soak.Options{Algorithms: []string{"setnx-px"}, Time: 15 * time.Second, Rate: 30, Seed: 7,
		Faults: []string{"late-release"}, Emit: true, Out: out})
	a := rep.Algorithms[0]
	if a.Verdict != checker.Unsafe || a.Incidents == 0 || a.First == nil {
		t.Fatalf("setnx-px: %s with %d incidents, want unsafe (%s)", a.Verdict, a.Incidents, a.DecidedBy)
	}
	if a.Groups[0].Cause == "no fault" || len(firstRules(a)) == 0 {
		t.Errorf("the first group's cause is %q, the first violation's faults %v: want the faults named", a.Groups[0].Cause, firstRules(a))
	}
	if a.Live.Violations == 0 || a.Live.Ops == 0 {
		t.Errorf("the live check saw %+v, want the violations", a.Live)
	}
	if a.PerHour.Lo <= 0 || a.PerHour.Hi <= a.PerHour.Value || a.HeldShare <= 0 || a.HeldShare > 1 {
		t.Errorf("rate %+v, held %.2f: want an interval around the rate and a share of the run", a.PerHour, a.HeldShare)
	}
	ss, err := scenarios.LoadFile(filepath.Join(out, soak.PlanFile))
	if err != nil || len(ss) != 1 || len(ss[0].Faults) != rep.Faults {
		t.Fatalf("plan.yaml: %v, %d scenarios, want the soak's one with its %d faults", err, len(ss), rep.Faults)
	}
	if a.Emitted == "" {
		t.Fatal("no scenario emitted for the first violation")
	}
	em, err := scenarios.LoadFile(filepath.Join(out, a.Emitted))
	if err != nil || len(em) != 1 || len(em[0].Faults) == 0 || len(em[0].Faults) > len(firstRules(a)) {
		t.Errorf("emitted %s: %v, want one scenario with at most the %d faults of the first violation", a.Emitted, err, len(firstRules(a)))
	}
	t.Logf("emitted: %s", a.EmitNote)
	if len(em) == 1 && len(em[0].Faults) == 1 && !strings.Contains(a.EmitNote, "size shrunk") {
		t.Errorf("the emitted late release was not shrunk: %s", a.EmitNote)
	}

	if !slices.Equal(a.FirstRules, firstRules(a)) {
		t.Errorf("first_rules %v, but the first violation's group lists faults %v", a.FirstRules, firstRules(a))
	}
	// A replay runs the same faults at the same moments; the servers' and the scheduler's timing
	// differ, so its first violation may come under another fault, but the soak's first must
	// happen again under the same faults.
	replay := soaked(t, soak.Options{Algorithms: []string{"setnx-px"}, Replay: out})
	b := replay.Algorithms[0]
	if b.Verdict != checker.Unsafe || b.Reproduced == nil || !*b.Reproduced {
		t.Errorf("replay: %s, reproduced %v: no violation under the faults %v of the soak's first (the replay's rule sets: %v)",
			b.Verdict, b.Reproduced, a.FirstRules, b.RuleSets)
	}
}

// TestSoakFencedLosesNoUpdate: token+fence under the faults a fence answers (pauses, partitions,
// slow networks, late releases) may see holders overlap, but its resource rejects every stale
// write: no update is lost.
func TestSoakFencedLosesNoUpdate(t *testing.T) {
	rep := soaked(t, soak.Options{Algorithms: []string{"token+fence"}, Time: 15 * time.Second, Rate: 30, Seed: 2,
		Faults: []string{"client-pause", "partition", "latency", "late-release"}})
	a := rep.Algorithms[0]
	if a.LostUpdates != 0 || a.FenceRegressions != 0 {
		t.Errorf("token+fence: %d lost updates, %d fence regressions, want none (%s)", a.LostUpdates, a.FenceRegressions, a.DecidedBy)
	}
	if a.FaultsFired < 3 || a.WritesOk == 0 {
		t.Errorf("token+fence: %d faults fired, %d writes: the soak proved nothing", a.FaultsFired, a.WritesOk)
	}
}
