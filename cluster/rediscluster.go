package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RedisCluster is Redis Cluster (docs/design.md#session-locks-and-more-services): 3 masters and 3 replicas of Debian's
// redis-server in cluster mode, formed by lockchaos itself (no redis-cli prompts).
const RedisCluster = "redis-cluster"

// redisClusterMasters is how many masters the cluster has; each has one replica.
const redisClusterMasters = 3

// redisClusterBusPort is a cluster node's bus port in a container: the client port's + 10000,
// Redis's default.
const redisClusterBusPort = redisPort + 10000

// DefaultLockKey is the key whose slot's master Master names on redis-cluster when Spec.LockKey
// is empty: the harness's lock name.
const DefaultLockKey = "lock"

// redisClusterNodeTimeout is cluster-node-timeout: how long a master may be unreachable before
// the others call it failing. The failover takes this, plus the gossip that turns PFAIL into FAIL,
// plus the replica's election delay (Redis waits 500 ms + up to 500 ms at random before asking for
// votes): measured on a shared 2-core machine (load average 9–10), kill to the replica
// promoted 1.41–1.91 s in 12 runs of TestRedisCluster, to the first grant by it 1.4–2.3 s (token
// × failover). Natural promotion is fast enough, so no CLUSTER FAILOVER TAKEOVER is forced.
// Lower makes a loaded machine's scheduling stalls look like failures.
const redisClusterNodeTimeout = 500 * time.Millisecond

func init() {
	registerTopology(RedisCluster, topology{
		family: "redis", clients: KindRedis, traits: []Trait{TraitKeyExpiry},
		nodes: func(n int) (int, error) {
			if n != 0 && n != 2*redisClusterMasters {
				return n, fmt.Errorf("redis-cluster with %d nodes (it is 3 masters + 3 replicas: leave nodes at 0)", n)
			}
			return 2 * redisClusterMasters, nil
		},
		needs: func() []Requirement {
			r := withVersion(checkCommand(redisServerBin, "redis-server"), redisVersion)
			r.Name = "redis-server (cluster)"
			return []Requirement{r}
		},
		containers:  []Kind{KindRedis},
		start:       (*topo).startRedisCluster,
		leader:      (*topo).redisClusterMaster,
		replication: (*topo).redisClusterMaster,
		failover:    (*topo).redisClusterFailover,
		endpoints:   func(_ *topo, e *Endpoints) { e.Cluster = true },
	})
}

// startRedisCluster starts redis-1..3 (masters, the slots split in three) and redis-4..6 (the
// replica of redis-1..3), then forms the cluster over the bus. Every node announces, as its
// client address, a proxy of its own (linkKey{0, node}) rather than its real port: the replicas
// replicate through it, so the failover fault can cut replication; redirects and CLUSTER SLOTS
// name it too, and each client's Dial maps it to that client's own proxy for the node. The
// cluster bus (gossip, failure detection, votes) goes direct, so no fault but a kill makes a node
// look down. It returns once cluster_state is ok on every node, every replica is in sync and
// every node knows every replica.
//
// Start measured at 2.3–3.2 s (9 starts, load average 9–10 on 2 cores): at least 2 s of it is
// Redis's CLUSTER_WRITABLE_DELAY, a master reporting cluster_state:ok no sooner than 2 s after its
// process started. The same delay makes a restarted master serve again ≈2 s after the restart.
func (c *topo) startRedisCluster(ctx context.Context) error {
	n := c.spec.Nodes
	ports, err := freePorts(2 * n) // client ports, then bus ports
	if err != nil {
		return err
	}
	// Where the announced addresses listen: 127.0.0.1 on the local backend; on the docker
	// backend the run network's gateway, where the other containers reach the harness's proxies
	// and each node's bus, published there (the bus stays unproxied, as on the local backend).
	listen, err := c.be.replicationListen()
	if err != nil {
		return err
	}
	announceIP, _, _ := net.SplitHostPort(listen)
	var nodes []*node
	for i := range n {
		name := fmt.Sprintf("redis-%d", i+1)
		bus := ports[n+i]
		nd := c.newNode(name, KindRedis, []int{ports[i], bus}, server{})
		announce, err := c.px.addOn(linkKey{0, name}, listen, nd.Addr)
		if err != nil {
			return err
		}
		nd.inner = announce
		_, aport, _ := net.SplitHostPort(announce)
		// clusterConf is the node's cluster mode, its bus listening on busPort.
		clusterConf := func(busPort int) []string {
			return []string{
				"cluster-enabled yes",
				"cluster-config-file nodes.conf",
				fmt.Sprintf("cluster-node-timeout %d", redisClusterNodeTimeout.Milliseconds()),
				fmt.Sprintf("cluster-port %d", busPort),
				"cluster-announce-ip " + announceIP,
				"cluster-announce-port " + aport,
				fmt.Sprintf("cluster-announce-bus-port %d", bus),
				// A replica cut off from its master (the failover fault cuts replication from
				// the start) still stands for election: a factor of 0 skips the data-age check.
				"cluster-replica-validity-factor 0",
				"cluster-allow-replica-migration no",
			}
		}
		// A container keeps nodes.conf across a restart, and publishes its bus on the gateway.
		// It keeps /data too, where a replica's full sync would leave a dump.rdb that a
		// restart loads (the local backend removes it): a replica loads from the socket instead.
		nd.srv.conf = append(clusterConf(redisClusterBusPort), "repl-diskless-load swapdb")
		nd.srv.keep = true
		nd.srv.gatewayPorts = []int{redisClusterBusPort}
		nd.srv.argv = func(dir string) []string {
			// A restarted node comes back empty (no persistence, docs/design.md#faults) but keeps its
			// nodes.conf: its identity in the cluster, as a real node with appendonly no does.
			_ = os.Remove(filepath.Join(dir, "dump.rdb"))
			lines := append(redisConfig(ports[i], dir), clusterConf(bus)...)
			path, err := writeConfig(dir, "redis.conf", lines)
			if err != nil {
				// server.argv cannot fail: a command that says why and exits does, and its
				// output is in the start error (process.failed's log tail).
				return []string{"/bin/sh", "-c", `echo "$0" >&2; exit 1`, "write redis.conf: " + err.Error()}
			}
			return []string{redisServerBin, path}
		}
		nd.ready = func(ctx context.Context) error {
			if err := redisPing(ctx, nd.Addr); err != nil {
				return err
			}
			if nd.restarted {
				return clusterStateOK(ctx, nd.Addr)
			}
			return nil
		}
		c.add(nd)
		nodes = append(nodes, nd)
	}
	// The masters first: a master reports cluster_state:ok no sooner than 2 s after its process
	// started (CLUSTER_WRITABLE_DELAY), and the replicas' starts fit in that wait.
	m := redisClusterMasters
	if err := c.launchAll(ctx, nodes[:m]); err != nil {
		return err
	}
	if err := c.launchAll(ctx, nodes[m:]); err != nil {
		return err
	}
	return c.formRedisCluster(ctx, nodes)
}

// formRedisCluster does what redis-cli --cluster create does, without its prompts.
func (c *topo) formRedisCluster(ctx context.Context, nodes []*node) error {
	do := func(nd *node, args ...string) (any, error) {
		v, err := redisDo(ctx, nd.Addr, 2*time.Second, args...)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", nd.Name, strings.Join(args, " "), err)
		}
		return v, nil
	}
	m := redisClusterMasters
	ids := make([]string, len(nodes))
	for i, nd := range nodes {
		// Distinct epochs before the nodes meet: no epoch collision to resolve by gossip.
		if _, err := do(nd, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return err
		}
		v, err := do(nd, "CLUSTER", "MYID")
		if err != nil {
			return err
		}
		ids[i], _ = v.(string)
		if i < m {
			lo, hi := i*16384/m, (i+1)*16384/m-1
			if _, err := do(nd, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
				return err
			}
		}
	}
	for _, nd := range nodes[1:] {
		host, port, _ := net.SplitHostPort(nd.inner)
		if _, err := do(nodes[0], "CLUSTER", "MEET", host, port, strconv.Itoa(nd.ports[1])); err != nil {
			return err
		}
	}
	// A replica can only follow a master it knows.
	if err := waitFor(ctx, 10*time.Second, func() error {
		for _, nd := range nodes[m:] {
			if err := knowsAll(ctx, nd.Addr, ids); err != nil {
				return fmt.Errorf("%s: %w", nd.Name, err)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for i, nd := range nodes[m:] {
		if _, err := do(nd, "CLUSTER", "REPLICATE", ids[i]); err != nil {
			return err
		}
	}
	return waitFor(ctx, 15*time.Second, func() error {
		for i, nd := range nodes {
			if err := clusterStateOK(ctx, nd.Addr); err != nil {
				return fmt.Errorf("%s: %w", nd.Name, err)
			}
			if err := knowsReplicas(ctx, nd.Addr, ids[m:]); err != nil {
				return fmt.Errorf("%s: %w", nd.Name, err)
			}
			if i >= m {
				if err := replicaInSync(ctx, nd.Addr); err != nil {
					return fmt.Errorf("%s: %w", nd.Name, err)
				}
			}
		}
		return nil
	})
}

// waitFor calls check every 25 ms until it returns nil or limit passes.
func waitFor(ctx context.Context, limit time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis-cluster not formed after %v: %w", limit, err)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func clusterStateOK(ctx context.Context, addr string) error {
	v, err := redisDo(ctx, addr, time.Second, "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	if s, _ := v.(string); !strings.Contains(s, "cluster_state:ok") {
		return fmt.Errorf("cluster_state not ok yet")
	}
	return nil
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, flags, master string
	slots                   []string
}

func clusterNodes(ctx context.Context, addr string) ([]clusterNode, error) {
	v, err := redisDo(ctx, addr, time.Second, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	s, _ := v.(string)
	var out []clusterNode
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 {
			continue
		}
		a, _, _ := strings.Cut(f[1], "@") // ip:port@bus[,hostname]
		out = append(out, clusterNode{id: f[0], addr: a, flags: f[2], master: f[3], slots: f[8:]})
	}
	return out, nil
}

func knowsAll(ctx context.Context, addr string, ids []string) error {
	ns, err := clusterNodes(ctx, addr)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, n := range ns {
		if !strings.Contains(n.flags, "handshake") && !strings.Contains(n.flags, "noaddr") {
			known[n.id] = true
		}
	}
	for _, id := range ids {
		if !known[id] {
			return fmt.Errorf("does not know node %s yet", id)
		}
	}
	return nil
}

func knowsReplicas(ctx context.Context, addr string, ids []string) error {
	ns, err := clusterNodes(ctx, addr)
	if err != nil {
		return err
	}
	slave := map[string]bool{}
	for _, n := range ns {
		if strings.Contains(n.flags, "slave") && n.master != "-" {
			slave[n.id] = true
		}
	}
	for _, id := range ids {
		if !slave[id] {
			return fmt.Errorf("does not know %s as a replica yet", id)
		}
	}
	return nil
}

// redisClusterMaster names the node that is master of the lock key's slot now, as the first
// running node that answers sees it (a master it does not flag as failed). It is the topology's
// Master and Leader (the slot master is the one node that decides the lock), and its node's
// announce proxy is the replication link the failover fault cuts.
func (c *topo) redisClusterMaster(ctx context.Context) (string, error) {
	key := c.spec.LockKey
	if key == "" {
		key = DefaultLockKey
	}
	var errs []string
	for _, nd := range c.data {
		v, err := redisDo(ctx, nd.Addr, time.Second, "CLUSTER", "KEYSLOT", key)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", nd.Name, err))
			continue
		}
		slot, _ := strconv.Atoi(fmt.Sprint(v))
		ns, err := clusterNodes(ctx, nd.Addr)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", nd.Name, err))
			continue
		}
		for _, n := range ns {
			if !strings.Contains(n.flags, "master") || strings.Contains(n.flags, "fail") || !ownsSlot(n.slots, slot) {
				continue
			}
			for _, d := range c.data {
				if d.inner == n.addr {
					return d.Name, nil
				}
			}
			return "", fmt.Errorf("%s says slot %d's master is %s, which is none of %v", nd.Name, slot, n.addr, c.names())
		}
		errs = append(errs, fmt.Sprintf("%s: no live master for slot %d", nd.Name, slot))
	}
	return "", fmt.Errorf("no master of key %q: %s", key, strings.Join(errs, "; "))
}

// ownsSlot reads CLUSTER NODES slot fields ("0-5460", "7", "[93->-id]" while migrating).
func ownsSlot(fields []string, slot int) bool {
	for _, f := range fields {
		if strings.HasPrefix(f, "[") {
			continue
		}
		lo, hi, isRange := strings.Cut(f, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 == nil && err2 == nil && a <= slot && slot <= b {
			return true
		}
	}
	return false
}

// redisClusterFailover kills master for good; the cluster promotes its replica by itself, after
// cluster-node-timeout and an election (see redisClusterNodeTimeout).
func (c *topo) redisClusterFailover(ctx context.Context, master string) error {
	return c.Kill(ctx, master)
}
