package locktest

import (
	"os"
	"time"

	"github.com/lockchaos/lockchaos/scenarios"
)

// An Option changes how Run tests a lock.
type Option interface {
	apply(*config)
}

// optionFunc adapts a function to an Option.
type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is what the options set. Zero durations and counts keep each scenario's own values.
type config struct {
	scenarios  []string
	custom     []scenarios.Scenario
	files      []string
	duration   time.Duration
	clients    int
	ttl        time.Duration
	renews     time.Duration
	backend    string
	topologies []string
	expect     map[string]string
	expectLike string
	out        string
	seed       int64
}

// defaults is every option's default in one place.
func defaults() config {
	return config{
		backend:    "local",
		topologies: []string{"redis-single"},
		expect:     map[string]string{},
		out:        os.Getenv("LOCKCHAOS_REPORTS"), // "" = the test's own temp dir
		seed:       1,
	}
}

// WithScenarios runs only the named scenarios of the catalogue (`lockchaos list` shows them), in
// the catalogue's order. Default: every scenario that applies to the lock's topology. A named
// scenario that does not apply is skipped with the catalogue's reason; an unknown name fails.
func WithScenarios(names ...string) Option {
	return optionFunc(func(c *config) { c.scenarios = append(c.scenarios, names...) })
}

// WithScenario adds a scenario of your own: a fault aimed at your lock's weak spot (a pause at
// one of the named points your Locker calls through Config.Point, a partition of one node, ...),
// written as the catalogue's are (scenarios.Scenario; `lockchaos list --json` shows the catalogue's
// as examples). Its variants are looked up under the topology's family (`lockchaos list` shows
// it: "redis", "redlock", "zookeeper", "etcd", "sql"). It runs after the catalogue scenarios chosen with
// WithScenarios; once any scenario of your own is given, the catalogue runs only the scenarios
// WithScenarios names (default: none of them). It is expected safe unless WithExpect says
// otherwise. Default: no scenario of your own.
func WithScenario(s scenarios.Scenario) Option {
	return optionFunc(func(c *config) { c.custom = append(c.custom, s) })
}

// WithScenarioFile adds every scenario of a YAML scenario file, as `lockchaos run --scenario-file`
// reads it (unknown fields and bad values fail the test with the line number), as WithScenario
// adds one. Default: none.
func WithScenarioFile(path string) Option {
	return optionFunc(func(c *config) { c.files = append(c.files, path) })
}

// WithDuration sets the fault phase of every run: how long clients run while faults fire, before
// every fault heals and a liveness window (about 1.5 s at the catalogue's TTL) follows. Default:
// each scenario's own, 2 s for most (the event-triggered faults hit in the first second).
func WithDuration(d time.Duration) Option {
	return optionFunc(func(c *config) { c.duration = d })
}

// WithClients sets the number of concurrent clients, each with its own Locker from the factory.
// Default: each scenario's own, 5 for most.
func WithClients(n int) Option {
	return optionFunc(func(c *config) { c.clients = n })
}

// WithTTL sets the lease passed to the factory as Config.TTL. Default: each scenario's own, 500 ms
// for most. The catalogue sizes its faults in leases (a pause of lease+400 ms, a jump of one
// lease), the lease being the longest Lease.TTL your lock reports, else this TTL: a longer TTL
// gets longer faults.
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *config) { c.ttl = d })
}

// WithRenewal says that the lock renews its lease in the background, every period (a watchdog
// goroutine, a keepalive): the faults that must outlast the lease then outlast one renewal more
// (a pause of lease + period + 400 ms), so a holder frozen between two renewals still loses its
// lease. Default: the lock renews nothing. Tell it the period your lock uses at the TTL it gets
// (TTL/3 for a Redisson-style watchdog at the default 500 ms: 167 ms); too short a period gives
// faults that a renewal can dodge, and the run may then pass a lock that fails.
func WithRenewal(period time.Duration) Option {
	return optionFunc(func(c *config) { c.renews = period })
}

// WithBackend chooses how servers are started: "local" (Debian binaries as child processes) or
// "docker" (containers; the test then imports the docker backend, which locktest does not
// compile in by itself: import _ "github.com/lockchaos/lockchaos/cluster/docker"). Default
// "local".
func WithBackend(name string) Option {
	return optionFunc(func(c *config) { c.backend = name })
}

// WithTopology says which servers the lock runs on: any topology `lockchaos list` shows —
// "redis-single" (one redis-server; the factory gets its address in Config.Addrs[0]),
// "redis-multi" (five independent masters in Config.Addrs), "redis-sentinel" (a master, a replica
// and three Sentinels in Config.Sentinel), "redis-cluster" (Config.Cluster set, the seed nodes in
// Config.Addrs), "zookeeper" (a 3-node ensemble in Config.Addrs), "etcd" (etcd members in
// Config.Addrs), "postgres", "postgres-standby", "postgres-pgbouncer" and "mariadb" (Config.SQL is
// how to log in, Config.Addrs the server's address), "kubernetes" (a kube-apiserver at
// https://Config.Addrs[0], Config.Kube its token and CA: algorithms.KubeRESTConfig makes the
// client-go rest.Config of a user's own elector). The first is where the lock runs; the others
// are topologies it also supports. Each topology's reference lock (token on the Redis ones, redlock
// on redis-multi, zookeeper, etcd, pg-advisory on the PostgreSQL ones, mysql-get-lock on mariadb,
// k8s-leaderelection on kubernetes)
// gives the n/a reasons and, with WithExpectationsOf, the expectations. Default "redis-single"
// alone, so the failover scenario (which runs on redis-sentinel) is skipped: a factory that
// handles Config.Sentinel adds it with WithTopology("redis-single", "redis-sentinel").
func WithTopology(topologies ...string) Option {
	return optionFunc(func(c *config) { c.topologies = topologies })
}

// WithExpect sets the verdict expected of the lock in a scenario: "safe", "unsafe",
// "unsafe-service", "unsafe-client", "stuck" or "unknown". Default "safe" for every scenario: a
// user lock has no column in the catalogue, and what its author wants to know is whether it is
// safe. A lock that is unsafe by design under a fault (every lease-based lock under client-pause)
// says so here, and the subtest then fails if the lock does better or worse than that.
func WithExpect(scenario, verdict string) Option {
	return optionFunc(func(c *config) { c.expect[scenario] = verdict })
}

// WithExpectationsOf takes the expected verdicts from a catalogue algorithm's column (e.g.
// "token" for a single-Redis lock with owner-checked release): the lock must do as well as that
// algorithm, and fails where it does differently. WithExpect still wins for its scenario.
// Default: none (every scenario expects "safe").
func WithExpectationsOf(algorithm string) Option {
	return optionFunc(func(c *config) { c.expectLike = algorithm })
}

// WithOut writes each run's history.jsonl, result.json and report.html under dir, in
// dir/<scenario>/<lock>/. Default: $LOCKCHAOS_REPORTS when set, else the test's temp dir (removed
// when the test ends: set LOCKCHAOS_REPORTS to keep the reports of a failing run).
func WithOut(dir string) Option {
	return optionFunc(func(c *config) { c.out = dir })
}

// WithSeed sets the seed of every run (fault targets, client think times, tokens from
// Config.Rand). Default 1, so a failure reproduces.
func WithSeed(seed int64) Option {
	return optionFunc(func(c *config) { c.seed = seed })
}
