package userlocks

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/locktest"
)

// factories is each topology's correct lock, and how to build a twin with a bug.
var factories = map[string]func(bug Bug) locktest.Factory{
	"redis-single":   redisFactory,
	"redis-sentinel": redisFactory,
	"redis-cluster":  redisFactory,
	"redis-multi": func(bug Bug) locktest.Factory {
		return func(cfg algorithms.Config) (algorithms.Locker, error) { return NewRedlock(cfg, bug) }
	},
	"zookeeper": func(bug Bug) locktest.Factory {
		return func(cfg algorithms.Config) (algorithms.Locker, error) {
			return NewZooKeeperLock(cfg, bug == Persistent)
		}
	},
	"etcd": func(bug Bug) locktest.Factory {
		return func(cfg algorithms.Config) (algorithms.Locker, error) { return NewEtcdLock(cfg, bug) }
	},
	"postgres":         pgFactory,
	"postgres-standby": pgFactory,
	// Through pgbouncer's transaction pooling only a transaction pins a server session: the
	// correct lock there is the transaction-level one.
	"postgres-pgbouncer": func(bug Bug) locktest.Factory {
		if bug == SessionLock {
			return pgFactory(Correct)
		}
		return func(cfg algorithms.Config) (algorithms.Locker, error) { return NewPgXactLock(cfg, bug) }
	},
	"mariadb": func(bug Bug) locktest.Factory {
		return func(cfg algorithms.Config) (algorithms.Locker, error) { return NewGetLock(cfg, bug) }
	},
}

func redisFactory(bug Bug) locktest.Factory {
	return func(cfg algorithms.Config) (algorithms.Locker, error) { return NewRedisLock(cfg, bug) }
}

func pgFactory(bug Bug) locktest.Factory {
	return func(cfg algorithms.Config) (algorithms.Locker, error) { return NewPgAdvisoryLock(cfg, bug) }
}

// differs is where a correct lock legitimately differs from what WithExpectationsOf(the
// topology's reference) expects, each measured (USERLOCKS_SCENARIOS=all, seed 1; see why).
var differs = map[string]map[string]string{
	// The reference recipe believes its lock until told the session expired; this one gives it up
	// the moment its connection is lost (Curator's SUSPENDED advice), so the holder cut off by the
	// partition skips its write (the catalogue expects the same of user-zookeeper).
	"zookeeper": {"partition": "safe: it gives the lock up when its connection is lost"},
	// The reference Mutex never looks at its session and writes after the heal (unsafe-client);
	// this holder gives up when its session's Done closes and skips its write. The next holder,
	// granted at ≈1.4 s, writes after etcd's 2.5 s hold, at ≈3.9 s: the run waits for that write
	// (a holder in its critical section at the run's end), and the danger window reaches it (a
	// write under a grant made inside the window), so the run is safe with its evidence.
	"etcd": {"partition": "safe: it gives the lock up when its session ends; the next holder's write is the evidence"},
}

// focused is the scenarios run per topology by default, two or three each to keep CI short: where a
// correct lock must hold (or fail just as its reference does) under a fault a careless one
// fails. USERLOCKS_SCENARIOS=all runs the whole catalogue (about 8 minutes for TestCorrect), or
// give a comma-separated list.
var focused = map[string][]string{
	"redis-single":   {"slow-release", "partition"},
	"redis-sentinel": {"slow-release", "failover"},
	"redis-cluster":  {"slow-release", "node-kill"},
	"redis-multi":    {"latency", "partition"},
	"zookeeper":      {"client-crash", "partition"},
	// Not latency: the built-in etcd is unsafe there in about 2 runs of 9 as well (a grant at the
	// latency's heal that no release explains; scenarios/expect_etcd.go), a finding, not CI's.
	// partition: safe with evidence only since the run waits for the next holder's write.
	"etcd":               {"client-crash", "slow-release", "partition"},
	"postgres":           {"partition", "session-kill"},
	"postgres-standby":   {"partition", "failover"},
	"postgres-pgbouncer": {"pgbouncer-transaction", "session-kill"},
	"mariadb":            {"partition", "session-kill"},
}

func scenarios(topology string) []locktest.Option {
	switch v := os.Getenv("USERLOCKS_SCENARIOS"); v {
	case "all":
		return nil
	case "":
		return []locktest.Option{locktest.WithScenarios(focused[topology]...)}
	default:
		return []locktest.Option{locktest.WithScenarios(strings.Split(v, ",")...)}
	}
}

// topologies is every topology to test: all of them, or USERLOCKS_TOPOLOGIES's.
func topologies(t *testing.T) []string {
	if v := os.Getenv("USERLOCKS_TOPOLOGIES"); v != "" {
		return strings.Split(v, ",")
	}
	return slices.Sorted(maps.Keys(factories))
}

// seeds is USERLOCKS_SEEDS: how many times to run each scenario, with seeds 1..n (default 1).
func seeds(t *testing.T) int {
	v := os.Getenv("USERLOCKS_SEEDS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("USERLOCKS_SEEDS=%q: want a count from 1", v)
	}
	return n
}

// TestCorrect: each topology's correct lock does as well as the topology's reference lock in
// every scenario (WithExpectationsOf), but where differs says why it does otherwise.
func TestCorrect(t *testing.T) {
	for _, topo := range topologies(t) {
		t.Run(topo, func(t *testing.T) {
			ref, err := algorithms.Reference(topo)
			if err != nil {
				t.Fatal(err)
			}
			opts := append([]locktest.Option{locktest.WithTopology(topo), locktest.WithExpectationsOf(ref.Name)}, scenarios(topo)...)
			for scen, v := range differs[topo] {
				verdict, _, _ := strings.Cut(v, ":")
				opts = append(opts, locktest.WithExpect(scen, verdict))
			}
			if n := seeds(t); n > 1 {
				for seed := 1; seed <= n; seed++ {
					t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
						locktest.Run(t, factories[topo](Correct), append(opts, locktest.WithSeed(int64(seed)))...)
					})
				}
				return
			}
			locktest.Run(t, factories[topo](Correct), opts...)
		})
	}
}

// caught is a buggy twin and the scenario whose README row names its bug.
type caught struct {
	topology, scenario, verdict string
	bug                         Bug
}

var bugs = []caught{
	{"redis-single", "slow-release", "unsafe-service", PlainDel},
	{"redis-single", "latency", "unsafe-client", NoValidity},
	{"redis-single", "partition", "unsafe-client", NoValidity},
	{"redis-sentinel", "slow-release", "unsafe-service", PlainDel},
	{"redis-cluster", "slow-release", "unsafe-service", PlainDel},
	{"redis-multi", "latency", "unsafe-client", NoValidity},
	{"zookeeper", "client-crash", "stuck", Persistent},
	{"etcd", "partition", "unsafe-client", NoValid},
	// The correct SQL lock is unsafe-service in session-kill too (the server drops the killed
	// session's lock and grants the waiter); what the missing Valid adds is the killed holder's
	// write after the next holder's read: a lost update (the catalogue's Ul). Measured over 10
	// seeds per topology: 29 of 30 (postgres seed 4 once overlapped without losing the update;
	// the client class would have caught it, but missed mariadb seed 5, whose overlap the
	// checker charged to the service alone).
	{"postgres", "session-kill", "unsafe-lost", NoValid},
	{"postgres-standby", "session-kill", "unsafe-lost", NoValid},
	{"postgres-pgbouncer", "pgbouncer-transaction", "unsafe-service", SessionLock},
	{"mariadb", "session-kill", "unsafe-lost", NoValid},
}

var bugNames = map[Bug]string{PlainDel: "plain-del", NoValidity: "no-validity", NoValid: "no-valid", Persistent: "persistent", SessionLock: "session-lock"}

// TestBuggy: each buggy twin is caught by the scenario that names its bug: the run comes out
// with the verdict the bug leads to, or the subtest fails. USERLOCKS_SEEDS=n runs each n times,
// with seeds 1..n (TestCorrect too).
func TestBuggy(t *testing.T) {
	want := topologies(t)
	seeds := seeds(t)
	for _, b := range bugs {
		if !slices.Contains(want, b.topology) {
			continue
		}
		t.Run(b.topology+"/"+bugNames[b.bug], func(t *testing.T) {
			for seed := 1; seed <= seeds; seed++ {
				t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
					locktest.Run(t, factories[b.topology](b.bug), locktest.WithTopology(b.topology),
						locktest.WithScenarios(b.scenario), locktest.WithExpect(b.scenario, b.verdict),
						locktest.WithSeed(int64(seed)))
				})
			}
		})
	}
}
