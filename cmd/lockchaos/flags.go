package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/internal/runner"
)

// defaultOut is where runs are written unless --out says otherwise: a folder that holds no source.
const defaultOut = "out"

// common holds the flags every running command shares.
type common struct {
	duration, ttl time.Duration
	clients       int
	seed          int64
	seedSet       bool
	backend       string
	proxy         string
	out           string
	quiet, json   bool
	scenarioFile  string
	clusterFile   string
	redisImage    string
	full          bool
	zkImage       string
	pgImage       string
	mariadbImage  string
	etcdImage     string
}

// synopses are the first lines of each command's -h.
var synopses = map[string]string{
	"list":     "lockchaos list [--json] [--mutants]\n\nLists the algorithms with their named points, the scenarios, the topologies and the faults;\n--mutants adds the mutants (docs/design.md#mutants) and the scenarios that must catch them.",
	"selftest": "lockchaos selftest [--runs N] [--scenarios x,y] [flags]\n\nRuns every scenario against the mutants it must catch and its real algorithms; writes\nOUT/selftest.html, results.json and junit.xml; exits 0 only when every mutant is caught and every\nreal cell matches its expectation with evidence, in every one of its --runs runs (no retry: one\nmiss fails it, named with its n/N).",
	"run":      "lockchaos run --algorithm A [--scenario S] [flags]\n\nOne run of algorithm A under scenario S; exits by verdict (0 safe, 1 unsafe or stuck, 2 unknown),\nor by --expect when given (0 as expected, 1 not).",
	"matrix":   "lockchaos matrix [--algorithms a,b] [--scenarios x,y] [--runs R] [--shard i/n] [flags]\n\nRuns algorithms × scenarios, writes OUT/index.html, results.json and junit.xml; exits 0 when every\ncell matches the catalogue's expectation, 1 otherwise.",
	"explore":  "lockchaos explore --algorithm A [--budget 5m] [flags]\n\nTries every named point × every fault that can be aimed there, shrinks each failure; exits 1 if\nanything broke.",
	"soak":     "lockchaos soak --algorithm A | --algorithms a,b,c [--topology T] [--time 10m] [--rate 12] [--faults x,y] [--seed S] [--replay DIR] [--emit-scenario]\n\nRuns each algorithm for --time under a random mix of faults drawn from the seed (saved as\nOUT/plan.yaml and plan.json; --replay DIR runs them again), checks the history as it is written\nand whole at the end, and writes OUT/soak.html: violations by cause, rates with 95% intervals,\navailability; several algorithms run on the same plan and are compared. Exits 0 when every one is\nsafe, 1 when one is unsafe or stuck, 2 when one is unknown.",
	"check":    "lockchaos check [--json] [--write] DIR\n\nRe-checks the saved run in DIR from its history alone; exits by the run's recorded expectation\nwhen it has one (0 as expected, 1 not), by verdict otherwise.",
	"merge":    "lockchaos merge OUT DIR...\n\nJoins the output directories of the shards of one matrix (matrix --shard i/n) into one\nOUT/index.html, results.json and junit.xml; fails naming any cell no shard ran.",
	"doctor":   "lockchaos doctor [--clean] [--cluster FILE]\n\nSays which backends work here and how to fix the rest; with --cluster, whether every node and\ntoxiproxy API of the cluster file is reachable (exit 1 when one is not).",
	"serve":    "lockchaos serve [--addr 127.0.0.1:8080] [DIR]\n\nServes the reports in DIR (default " + defaultOut + ") on a loopback address.",
}

// newCommand is a flag set that reports errors through parse, and prints the command's synopsis
// and its flags with their defaults on -h.
func newCommand(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line by run
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\nflags:\n", synopses[name])
		fs.PrintDefaults()
	}
	return fs
}

// newFlags is the flag set of a command that runs cells: the common flags and the command's own.
func newFlags(name string, c *common) *flag.FlagSet {
	fs := newCommand(name)
	fs.DurationVar(&c.duration, "duration", 0, "fault phase length (default: the scenario's)")
	fs.DurationVar(&c.ttl, "ttl", 0, "lock TTL (default: the scenario's)")
	fs.IntVar(&c.clients, "clients", 0, "number of clients (default: the scenario's)")
	fs.Func("seed", "random seed (default: from the time; printed)", func(s string) error {
		_, err := fmt.Sscan(s, &c.seed)
		c.seedSet = err == nil
		return err
	})
	fs.StringVar(&c.backend, "backend", cluster.Local, "local, docker or external")
	fs.StringVar(&c.proxy, "proxy", harness.ProxyAuto, "auto, always or never: toxiproxy on client links")
	fs.StringVar(&c.out, "out", defaultOut, "output directory")
	fs.BoolVar(&c.quiet, "quiet", false, "print only the verdict lines")
	fs.BoolVar(&c.full, "full", false, "run every cell for its full time (by default a cell stops once a violation is found)")
	fs.BoolVar(&c.json, "json", false, "print results as JSON")
	fs.StringVar(&c.scenarioFile, "scenario-file", "", "YAML file of extra scenarios")
	fs.StringVar(&c.clusterFile, "cluster", "", "--backend external: YAML cluster file of the servers and their fault controls (docs/external.md)")
	fs.StringVar(&c.redisImage, "redis-image", "", "docker backend: Redis image (default "+cluster.DefaultRedisImage+"; make images builds lockchaos/redis offline)")
	fs.StringVar(&c.pgImage, "postgres-image", "", "docker backend: PostgreSQL image (default "+cluster.DefaultPostgresImage+"; make images builds lockchaos/postgres offline)")
	fs.StringVar(&c.mariadbImage, "mariadb-image", "", "docker backend: MariaDB image (default "+cluster.DefaultMariaDBImage+"; make images builds lockchaos/mariadb offline)")
	fs.StringVar(&c.etcdImage, "etcd-image", "", "docker backend: etcd image (default "+cluster.DefaultEtcdImage+"; make images builds lockchaos/etcd offline)")
	fs.StringVar(&c.zkImage, "zookeeper-image", "", "docker backend: ZooKeeper image (default "+cluster.DefaultZooKeeperImage+"; make images builds lockchaos/zookeeper)")
	return fs
}

// helpShown is -h: the command's usage, printed to stdout, exit 0.
type helpShown struct{ text string }

func (h *helpShown) Error() string { return h.text }

// parse parses the flags of a command that takes no positional arguments; flag errors become
// usage errors, and -h a helpShown.
func parse(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args)
	if err == nil && len(pos) > 0 {
		return usagef("%s: unexpected argument %q (flags start with --; see lockchaos %s -h)", fs.Name(), pos[0], fs.Name())
	}
	return err
}

// parseArgs parses flags placed anywhere among the positional arguments, and returns those.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				var b strings.Builder
				fs.SetOutput(&b)
				fs.Usage()
				return nil, &helpShown{b.String()}
			}
			return nil, usagef("%s: %v (see lockchaos %s -h)", fs.Name(), err, fs.Name())
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		// Zero means "the scenario's own" only when the flag is not given at all.
		if err == nil && (f.Name == "ttl" || f.Name == "duration" || f.Name == "clients") && strings.Trim(f.Value.String(), "0s") == "" {
			err = usagef("--%s %s: give a positive value (a lease needs a TTL; leave the flag out for the scenario's own)", f.Name, f.Value)
		}
	})
	return pos, err
}

// given reports whether --out was given, and the first of refused that was: the common flags a
// command that plans its own runs (explore, soak, analyze) does not take.
func given(fs *flag.FlagSet, refused ...string) (outSet bool, notHere string) {
	fs.Visit(func(f *flag.Flag) {
		outSet = outSet || f.Name == "out"
		if notHere == "" && slices.Contains(refused, f.Name) {
			notHere = f.Name
		}
	})
	return outSet, notHere
}

func (c *common) validate() error {
	switch {
	case c.duration < 0:
		return usagef("--duration %s is negative: give a positive duration like 5s", c.duration)
	case c.ttl < 0:
		return usagef("--ttl %s is negative: give a positive duration like 500ms", c.ttl)
	case c.clients < 0:
		return usagef("--clients %d is negative: give at least 1", c.clients)
	}
	switch c.backend {
	case cluster.Local, cluster.Docker, cluster.External:
	default:
		return usagef("--backend %q is unknown: use local, docker or external", c.backend)
	}
	if c.backend == cluster.External && c.clusterFile == "" {
		return usagef("--backend external needs --cluster FILE, a YAML list of the servers (see docs/external.md)")
	}
	if c.backend != cluster.External && c.clusterFile != "" {
		return usagef("--cluster is for --backend external (add --backend external)")
	}
	if !c.seedSet {
		c.seed = time.Now().UnixNano() % 1_000_000
	}
	return nil
}

func (c *common) options() runner.Options {
	o := runner.Options{Out: c.out, Backend: c.backend, Proxies: c.proxy, Seed: c.seed,
		Duration: c.duration, Clients: c.clients, TTL: c.ttl, Version: version,
		RedisImage: c.redisImage, ZooKeeperImage: c.zkImage, PostgresImage: c.pgImage, MariaDBImage: c.mariadbImage, EtcdImage: c.etcdImage, ClusterFile: c.clusterFile, Full: c.full,
		ScenarioFile: c.scenarioFile}
	return o
}
