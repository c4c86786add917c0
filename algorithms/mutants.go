package algorithms

// The mutants of docs/design.md#mutants: each is a real algorithm with one safety mechanism removed, as
// people get it wrong, built from the real implementation with one option set (tokenMutation,
// zkMutation, getsetLocker.plainDEL, redlockLocker.noValidity and quorum), so a mutant differs
// from its algorithm by exactly that mechanism. They are registered with Info.Mutant set: hidden
// from Names and All, listed by Mutants, found by Lookup (so `run --algorithm M` works). Every
// scenario of the catalogue names the mutants it must catch (scenarios.Scenario.Catches).

func init() {
	token := func(mut tokenMutation) func(Config) (Locker, error) {
		return func(cfg Config) (Locker, error) { return newTokenWith(cfg, "token mutant", mut) }
	}
	redlock := func(f func(*redlockLocker)) func(Config) (Locker, error) {
		return func(cfg Config) (Locker, error) {
			l, err := newRedlockLocker(cfg)
			if err != nil {
				return nil, err
			}
			f(l)
			return l, nil
		}
	}
	single := []string{topoRedisSingle, topoRedisSentinel}
	for _, m := range []Info{
		{
			Name: "token-plain-del", Mutant: "token", Topologies: single,
			Removed: "the owner check on release: a plain DEL deletes whoever's key is there",
			Points:  []string{"acquire:after-set", "release:before-del"},
			New:     token(tokenMutation{plainDEL: true}),
		},
		{
			Name: "token-no-validity", Mutant: "token", Topologies: single,
			Removed: "validity counted from the call: the holder trusts a full TTL from when the SET's reply arrived " +
				"(Validity = TTL + the time the acquire took)",
			Points: []string{"acquire:after-set", "release:before-del"},
			New:    token(tokenMutation{validityFromReply: true}),
		},
		{
			Name: "token-watchdog-blind", Mutant: "token+watchdog", Topologies: single,
			Removed:      "giving the lease up when a renewal fails: the holder keeps believing in it (Valid is always true)",
			Points:       []string{"release:before-del"},
			RenewsPerTTL: 1.0 / 3,
			New:          func(cfg Config) (Locker, error) { return newWatchdogLocker(cfg, "token-watchdog-blind", true) },
		},
		{
			Name: "token-no-ttl", Mutant: "token", Topologies: single,
			Removed: "the lease: SET NX without PX, so a crashed holder's key stays for ever",
			Points:  []string{"acquire:after-set", "release:before-del"},
			New:     token(tokenMutation{noTTL: true}),
		},
		{
			Name: "redlock-no-validity", Mutant: "redlock", Topologies: []string{topoRedisMulti},
			Removed: `the "elapsed < TTL − drift" check: the holder counts TTL − drift from when it has its quorum, ` +
				"however long the acquire took",
			Points: []string{"acquire:after-quorum", "release:before-del"},
			New:    redlock(func(l *redlockLocker) { l.noValidity = true }),
		},
		{
			Name: "redlock-no-quorum", Mutant: "redlock", Topologies: []string{topoRedisMulti},
			Removed: "the majority: one node's SET is enough to hold the lock (quorum 1)",
			Points:  []string{"acquire:after-quorum", "release:before-del"},
			New:     redlock(func(l *redlockLocker) { l.quorum = 1 }),
		},
		{
			Name: "redlock-all-nodes", Mutant: "redlock", Topologies: []string{topoRedisMulti},
			Removed: "the majority's tolerance: it needs every node's SET (quorum N), so one dead node stops every grant",
			Points:  []string{"acquire:after-quorum", "release:before-del"},
			New:     redlock(func(l *redlockLocker) { l.quorum = len(l.nodes) }),
		},
		{
			Name: "zookeeper-watch-lowest", Mutant: "zookeeper", Topologies: []string{topoZooKeeper},
			Removed: "watching the predecessor and listing the children again: every waiter watches the lowest node " +
				"and takes the lock when it goes",
			Points: []string{"acquire:after-create", "release:before-delete"},
			New:    newZooKeeperWith(zkMutation{watchLowest: true}),
		},
		{
			Name: "pg-advisory-no-valid", Mutant: "pg-advisory", Topologies: []string{topoPostgres, topoPostgresPgBouncer, topoPostgresStandby},
			Removed: "asking the server: the holder trusts its session lock without checking that its session " +
				"still holds it (Valid is always true)",
			Points: []string{"acquire:after-lock", "release:before-unlock"},
			New:    func(cfg Config) (Locker, error) { return asLocker(newPgAdvisoryWith(cfg, true)) },
		},
		{
			Name: "mysql-get-lock-no-valid", Mutant: "mysql-get-lock", Topologies: []string{topoMariaDB},
			Removed: "asking the server: the holder trusts its session lock without checking that its session " +
				"still holds it (Valid is always true)",
			Points: []string{"acquire:after-lock", "release:before-unlock"},
			New:    func(cfg Config) (Locker, error) { return asLocker(newMysqlGetLockWith(cfg, true)) },
		},
		{
			Name: "zookeeper-ignore-session", Mutant: "zookeeper", Topologies: []string{topoZooKeeper},
			Removed: "the session check: the holder keeps using the lock after its session expired (Valid is always true)",
			Points:  []string{"acquire:after-create", "release:before-delete"},
			New:     newZooKeeperWith(zkMutation{ignoreSession: true}),
		},
		{
			Name: "zookeeper-latch-watcher", Mutant: "zookeeper", Topologies: []string{topoZooKeeper},
			Removed: "listing the children again after the watch fires: the waiter holds the lock as soon as its " +
				"watcher is called, and ZooKeeper calls every outstanding watcher with the session event when " +
				"the client loses its server",
			Points: []string{"acquire:after-create", "release:before-delete"},
			New:    newZooKeeperWith(zkMutation{latchWatcher: true}),
		},
		{
			Name: "getset-no-compare", Mutant: "getset", Topologies: single,
			Removed: "the GET compare on release: a plain DEL deletes whoever's lock is there",
			Points:  []string{"acquire:after-setnx-fail", "acquire:after-get", "release:before-del"},
			New: func(cfg Config) (Locker, error) {
				l, err := newGetSet(cfg)
				if err == nil {
					l.(*getsetLocker).plainDEL = true
				}
				return l, err
			},
		},
		{
			Name: "getset-blind-takeover", Mutant: "getset", Topologies: single,
			Removed: "the compare of GETSET's old value with the one GET saw: every waiter that found the " +
				"expired value takes the lock over",
			Points: []string{"acquire:after-setnx-fail", "acquire:after-get", "release:after-get"},
			New: func(cfg Config) (Locker, error) {
				l, err := newGetSet(cfg)
				if err == nil {
					l.(*getsetLocker).blindTakeover = true
				}
				return l, err
			},
		},
		{
			Name: "k8s-leaderelection-ignore-stopped", Mutant: "k8s-leaderelection", Topologies: []string{topoKubernetes},
			Removed: "honouring OnStoppedLeading (kubernetes #23731): the leader goes on while IsLeader() says so, " +
				"which stays true after its renewals failed and the elector gave up",
			Points: []string{"release:before-cancel"}, Unreached: k8sClockUnreached,
			New: newK8sElector(false, true),
		},
		{
			Name: "k8s-leaderelection-own-duration", Mutant: "k8s-leaderelection-short-lease", Topologies: []string{topoKubernetes},
			Removed: "the holder's recorded LeaseDurationSeconds (kubernetes #114872): each candidate counts the lease by " +
				"its own LeaseDuration, as client-go did before v0.27 (#47671)",
			Points: []string{"release:before-cancel"}, Unreached: k8sClockUnreached,
			New: newK8sShortLease(true),
		},
		{
			Name: "fence-unchecked", Mutant: "token+fence", Topologies: single,
			Removed: "the resource's fence check: fences are handed out, nobody rejects a stale one",
			Points:  []string{"release:before-del"},
			Fenced:  true, FenceUnchecked: true,
			New: newTokenFence,
		},
	} {
		m.Summary = "mutant of " + m.Mutant + ": without " + m.Removed
		m.Source = "docs/design.md#mutants (teeth): " + m.Mutant + " with one mechanism removed"
		Register(m)
	}
}

// asLocker returns a constructor's locker as a Locker, nil (not a nil *T in an interface) on error.
func asLocker[T Locker](l T, err error) (Locker, error) {
	if err != nil {
		return nil, err
	}
	return l, nil
}
