package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/internal/procclient"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestCheckGivesTheRunsVerdict: `lockchaos check DIR` (runner.CheckDir) of a run decides exactly
// what the run decided — the verdict and everything with it — because everything that decides is
// in the history: for runs of the default matrix's kind (token × baseline, client-pause and
// partition on the local backend) and for a run a broken process client ended early (its history's
// abort line says so and why). A real run per scenario of the matrix would take too long; these
// cover a safe cell, an unsafe one, a fault the checker must place, and the early end. Real
// servers.
func TestCheckGivesTheRunsVerdict(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real servers")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "algorithms", "process", "testdata", "wrong_id.sh"))
	if err != nil {
		t.Fatal(err)
	}
	broken, err := procclient.RegisterCommand(script, cluster.RedisSingle)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	o := runner.Options{Out: out, Seed: 1, Version: "test"}
	for _, c := range []struct{ scenario, algorithm string }{
		{"baseline", "token"}, {"client-pause", "token"}, {"partition", "token"}, {"baseline", broken},
	} {
		t.Run(c.scenario+"/"+c.algorithm, func(t *testing.T) {
			s, err := scenarios.Lookup(c.scenario)
			if err != nil {
				t.Fatal(err)
			}
			cell, err := s.Cell(c.algorithm)
			if err != nil {
				t.Fatal(err)
			}
			if c.algorithm == broken {
				cell.Expected = "safe" // a cut-short run is not safe: the check must say it does not match
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rc, _, err := runner.RunCell(ctx, cell, o, 0)
			if errors.Is(err, cluster.ErrMissingBinary) {
				testenv.MissingServer(t, err)
			}
			ran := rc.Result
			switch {
			case ran == nil:
				t.Fatalf("no result: %v", err)
			case c.algorithm == broken:
				if !errors.Is(err, algorithms.ErrBroken) || ran.Verdict != checker.Unknown ||
					!strings.HasPrefix(ran.DecidedBy, "the run ended early: ") || ran.Matches == nil || *ran.Matches {
					t.Fatalf("broken client's run: err %v, %s (%s), matches %v; want ErrBroken and unknown, decided by the early end",
						err, ran.Verdict, ran.DecidedBy, ran.Matches)
				}
			case err != nil:
				t.Fatal(err)
			}
			t.Logf("run: %s — %s", ran.Verdict, ran.DecidedBy)
			dir := runner.Dir(out, cell, 0)
			again, err := runner.CheckHistory(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := clockless(again.Result), clockless(*ran); !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("check DIR decided otherwise than the run:\ncheck: %s\nrun:   %s", g, w)
			}
			// And what the run wrote is what check --write would write.
			b, err := os.ReadFile(filepath.Join(dir, "result.json"))
			if err != nil {
				t.Fatal(err)
			}
			var saved checker.Result
			if err := json.Unmarshal(b, &saved); err != nil {
				t.Fatal(err)
			}
			if saved.Verdict != again.Result.Verdict || saved.DecidedBy != again.Result.DecidedBy {
				t.Errorf("result.json: %s (%s); check DIR: %s (%s)", saved.Verdict, saved.DecidedBy, again.Result.Verdict, again.Result.DecidedBy)
			}
			if _, err := os.Stat(filepath.Join(dir, harness.HistoryFile)); err != nil {
				t.Error(err)
			}
		})
	}
}

// clockless is a result without what the clock decides: how long the checks took.
func clockless(r checker.Result) checker.Result {
	r.CheckerMs, r.LockCheck.Ms, r.ResourceCheck.Ms = 0, 0, 0
	return r
}
