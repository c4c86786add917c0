package userlocks

import (
	"maps"
	"os"
	"slices"
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

// differs is where a correct lock legitimately differs from its topology's reference, measured
// (see each reason).
var differs = map[string]map[string]string{}

// focused is the scenarios run per topology by default (USERLOCKS_SCENARIOS=all runs the whole
// catalogue, or a comma-separated list).
var focused = map[string][]string{}

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
	{"postgres", "session-kill", "unsafe-lost", NoValid},
	{"postgres-standby", "session-kill", "unsafe-lost", NoValid},
	{"postgres-pgbouncer", "pgbouncer-transaction", "unsafe-service", SessionLock},
	{"mariadb", "session-kill", "unsafe-lost", NoValid},
}

var bugNames = map[Bug]string{PlainDel: "plain-del", NoValidity: "no-validity", NoValid: "no-valid", Persistent: "persistent", SessionLock: "session-lock"}

// TestBuggy: each buggy twin is caught by the scenario that names its bug: the run comes out
// with the verdict the bug leads to, or the subtest fails.
func TestBuggy(t *testing.T) {
	want := topologies(t)
	for _, b := range bugs {
		if !slices.Contains(want, b.topology) {
			continue
		}
		t.Run(b.topology+"/"+bugNames[b.bug], func(t *testing.T) {
			locktest.Run(t, factories[b.topology](b.bug), locktest.WithTopology(b.topology),
				locktest.WithScenarios(b.scenario), locktest.WithExpect(b.scenario, b.verdict))
		})
	}
}
