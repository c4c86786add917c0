package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// failover reproduces the Redis master/replica failure of the seed articles and the Redis distlock
// page: replication is cut before clients start (so every lock write lands on the master only), and
// when the fault fires the master is killed, so the topology promotes a replica that never saw the
// lock. Each topology fails over its own way (cluster.Cluster.Failover): redis-sentinel's
// Sentinel promotes the replica; redis-cluster's replica of the lock key's slot master wins the
// election of the other masters; postgres-standby's primary is fenced (killed) and its standby
// promoted with pg_promote, as an HA manager such as Patroni does, and clients that list both
// nodes (target_session_attrs=read-write) reconnect to it — without the session advisory locks,
// which are never replicated, and without the rows written since the cut.
//
//	clients ──▶ master ─ ✂ ─▶ replica          (armed at start)
//	clients ──▶ ✗ master      replica ★ master  (fired: kill; the replica is promoted)
type failover struct{}

func init() { Register(failover{}) }

// Available: a failover needs a replica to promote.
func (failover) Available(t cluster.Topology) string { return t.Lacks(cluster.TraitReplication) }

func (failover) Name() string { return "failover" }

func (failover) Describe(Target) string {
	return "replication cut since start; master killed; the replica (standby) is promoted"
}

// Arm cuts the replication link for the whole run (healed by HealAll).
func (failover) Arm(ctx context.Context, env Env, s Spec) (Heal, error) {
	t := Target{Spec: s, Nodes: []string{"replication"}}
	heal, err := addToxic(ctx, env, t, "timeout", blackHole, "both")
	if err != nil {
		return nil, fmt.Errorf("cut replication: %w", err)
	}
	return heal, nil
}

// Inject fails the master over (kills it for good): the target's nodes (the catalogue says nodes: master, so the
// history names the node), or the current master when none are given.
func (failover) Inject(ctx context.Context, env Env, t Target) (Heal, error) {
	nodes := t.Nodes
	if len(nodes) == 0 {
		m, err := env.Cluster().Master(ctx)
		if err != nil {
			return nil, fmt.Errorf("find master: %w", err)
		}
		nodes = []string{m}
	}
	var errs []error
	for _, n := range nodes {
		errs = append(errs, env.Cluster().Failover(ctx, n))
	}
	return nil, errors.Join(errs...)
}

func (failover) needs(Spec) []cluster.Control {
	return []cluster.Control{cluster.ControlReplication}
}

// failover's control is the replication link, which is the cluster's, not a node's: it is
// asked of the cluster's first node, whatever node the failover kills.
func (failover) needsOn(_ Spec, nodes []string) []string { return nodes[:min(1, len(nodes))] }

// A failover kills the master, and the promoted replica (standby) takes over: the service goes on.
func (failover) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnServers, false) }
