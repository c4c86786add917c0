package runner_test

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestCommand: the one re-run command keeps everything that decides the run — the chosen topology,
// the scenario file, the proxy mode, the backend — which the matrix's command used to drop.
func TestCommand(t *testing.T) {
	c := scenarios.Cell{Scenario: "soak", Algorithm: "pg-advisory", On: "postgres-standby"}
	o := runner.Options{ScenarioFile: "out/plan.yaml", Proxies: "always", Backend: "docker", Full: true}
	got := runner.Command(c, o, 7)
	for _, want := range []string{"--algorithm pg-advisory", "--scenario-file out/plan.yaml", "--scenario soak", "--seed 7",
		"--topology postgres-standby", "--proxy always", "--backend docker", "--full"} {
		if !strings.Contains(got, want) {
			t.Errorf("Command = %q: want %q in it", got, want)
		}
	}
	if got := runner.Command(scenarios.Cell{Scenario: "baseline", Algorithm: "token"}, runner.Options{Proxies: "auto"}, 1); got != "lockchaos run --algorithm token --scenario baseline --seed 1" {
		t.Errorf("a plain cell's command %q", got)
	}
}
