// Command lockchaos runs distributed lock algorithms against real servers under faults and checks
// that they keep mutual exclusion. See `lockchaos help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/internal/lcerr"
	"github.com/lockchaos/lockchaos/internal/runner"
)

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Exit codes, as Jepsen's (docs/design.md#command-line-contract).
const (
	exitValid   = 0
	exitInvalid = 1
	exitUnknown = 2
	exitUsage   = 254
	exitHarness = 255
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

const usage = `lockchaos — correctness and chaos tests for distributed locks

usage:
  lockchaos list [--json] [--mutants]                  algorithms, scenarios, topologies, faults (and mutants)
  lockchaos run --algorithm A --scenario S [flags]     one run; exit by verdict (or by --expect)
  lockchaos matrix [--algorithms a,b] [--scenarios x,y] [--runs R] [--shard i/n] [flags]
                                                       algorithms × scenarios; exit by expectations
  lockchaos merge OUT DIR...                           join the shards' outputs into one matrix in OUT
  lockchaos selftest [--runs N] [--scenarios x,y]      every scenario × the mutants it must catch and its
                                                       real algorithms; exit 0 only when all are caught
  lockchaos explore --algorithm A [--budget 5m]        every named point × fault, failures shrunk; exit 1 if any
  lockchaos soak --algorithm A [--time 10m] [--rate R] a long run under random mixed faults, checked as it
                                                       runs; --algorithms a,b compares them on one plan
  lockchaos analyze --algorithm A [--runs 3]           one lock under every scenario and the shipped
                                                       reproductions that name it: analysis.html
  lockchaos check [--write] DIR                        re-check a saved run from its history
  lockchaos doctor [--clean] [--cluster FILE]          which backends work here, how to fix the rest;
                                                       with --cluster: is every node and toxiproxy API of FILE reachable
  lockchaos serve [--addr 127.0.0.1:8080] [DIR]        serve reports on loopback
  lockchaos help [COMMAND]                             this text, or the command's

lockchaos COMMAND -h lists the command's flags with their defaults. run and matrix share these
(explore too, but for --duration and --scenario-file):
  --duration D --clients N --ttl D (default: the scenario's)  --seed N (default: from the time)
  --backend local|docker|external  --out ` + defaultOut + `  --quiet  --json  --scenario-file FILE

exit codes: 0 valid/as expected, 1 invalid/not as expected, 2 unknown, 254 bad usage or input, 255 harness error
external servers: --backend external --cluster FILE (YAML: nodes with name, kind, address, toxiproxy,
              kill/restart/pause/resume commands; see docs/external.md)
`

// commands are the subcommands, as the unknown-command message lists them.
var commands = []string{"list", "run", "matrix", "merge", "selftest", "explore", "soak", "analyze", "check", "doctor", "serve", "help"}

func main() {
	// go-redis logs every failed dial; under injected faults those are expected, and the history
	// records each operation's error.
	redis.SetLogger(quietLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is bad input: exit 254 with one line naming the problem and the fix.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// Is makes a usage error bad input, as every package's bad-input errors are.
func (e *usageError) Is(target error) bool { return target == lcerr.ErrBadInput }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var (
		code int
		err  error
	)
	switch args[0] {
	case "list", "run", "matrix", "explore", "soak", "analyze":
		if args, err = prepareProcessClients(args); err != nil {
			fmt.Fprintf(stderr, "lockchaos: %v\n", err)
			return exitUsage
		}
	}
	switch args[0] {
	case "list":
		code, err = cmdList(args[1:], stdout)
	case "run":
		code, err = cmdRun(ctx, args[1:], stdout, stderr)
	case "matrix":
		code, err = cmdMatrix(ctx, args[1:], stdout, stderr)
	case "explore":
		code, err = cmdExplore(ctx, args[1:], stdout, stderr)
	case "soak":
		code, err = cmdSoak(ctx, args[1:], stdout, stderr)
	case "analyze":
		code, err = cmdAnalyze(ctx, args[1:], stdout, stderr)
	case "check":
		code, err = cmdCheck(args[1:], stdout, stderr)
	case "doctor":
		code, err = cmdDoctor(ctx, args[1:], stdout)
	case "serve":
		code, err = cmdServe(ctx, args[1:], stdout)
	case "merge":
		code, err = cmdMerge(args[1:], stdout)
	case "selftest":
		code, err = cmdSelftest(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		if len(args) > 1 && args[1] != "help" && slices.Contains(commands, args[1]) {
			return run(ctx, []string{args[1], "-h"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return exitValid
	default:
		err = usagef("unknown command %q (commands: %s; see lockchaos help)", args[0], strings.Join(commands, ", "))
	}
	var help *helpShown
	if errors.As(err, &help) {
		fmt.Fprint(stdout, help.text)
		return exitValid
	}
	if err != nil {
		// Errors of the project's packages start with "lockchaos: " too: name the program once.
		fmt.Fprintf(stderr, "lockchaos: %s\n", strings.ReplaceAll(err.Error(), "lockchaos: ", ""))
		if runner.BadInput(err) {
			return exitUsage
		}
		return exitHarness
	}
	return code
}
