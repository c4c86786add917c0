package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// redisSentinelBin is Debian's redis-sentinel (a variable so a test or a packager can point
// elsewhere).
var redisSentinelBin = "redis-sentinel"

// sentinelPort is a sentinel container's port: Sentinel's default.
const sentinelPort = 26379

func init() {
	// Sentinel's config is its state: Restart starts the same container again.
	registerKind(KindSentinel, kind{
		argv:        sentinelArgv,
		container:   &Container{Image: redisImage, Port: sentinelPort, Reuse: true, start: sentinelContainer},
		wire:        protoRESP,
		wireSupport: "Redis RESP2/RESP3",
		ping:        func(ctx context.Context, addr string, _ SQLLogin) error { return redisPing(ctx, addr) },
		// The sentinels come with the master and its replicas, which they find.
		external: func(int) (string, error) { return RedisSentinel, nil },
		beside:   KindRedis,
	})
	registerTopology(RedisSentinel, topology{
		family: "redis", clients: KindRedis, traits: []Trait{TraitKeyExpiry},
		nodes: func(int) (int, error) { return 2, nil }, // the master and its replica; Spec.Nodes is ignored
		needs: func() []Requirement {
			return []Requirement{checkCommand(redisServerBin, "redis-server"), checkCommand(redisSentinelBin, "redis-sentinel")}
		},
		doctor: func() []Requirement {
			return []Requirement{
				withVersion(checkCommand(redisServerBin, "redis-server"), redisVersion),
				withVersion(checkCommand(redisSentinelBin, "redis-sentinel"), redisVersion),
			}
		},
		containers:  []Kind{KindRedis, KindSentinel},
		start:       (*topo).startSentinelTopology,
		master:      (*topo).sentinelMaster,
		replication: func(c *topo, _ context.Context) (string, error) { return c.replMaster, nil },
		endpoints:   func(c *topo, e *Endpoints) { e.MasterName = c.masterName() },
	})
}

// sentinelMasterName is the name the sentinels monitor the master under (Endpoints.MasterName).
const sentinelMasterName = "lockchaos"

// startSentinelTopology starts a master (redis-1), a replica (redis-2) whose replication link
// goes through its own proxy so a fault can cut it, then three sentinels. It returns once the
// replica is in sync and every sentinel knows the master, the replica and the other sentinels,
// so a failover can happen from the first moment of a run. The replica announces its address as
// other nodes know it (local: its real address; docker: its container name), since the master
// sees its connection come from the proxy: so Sentinel, which reads the master's INFO, promotes
// the right server, and tells clients an address Endpoints.Dial maps to their proxy.
func (c *topo) startSentinelTopology(ctx context.Context) error {
	listen, err := c.be.replicationListen()
	if err != nil {
		return err
	}
	ports, err := c.portsFor(KindRedis, KindRedis, KindSentinel, KindSentinel, KindSentinel)
	if err != nil {
		return err
	}
	master := c.redisNode("redis-1", ports[0], nil)
	c.add(master)
	if err := c.launchAll(ctx, []*node{master}); err != nil {
		return err
	}
	c.replMaster = master.Name
	replAddr, err := c.px.addOn(linkKey{0, master.Name}, listen, master.Addr)
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(replAddr)
	replica := c.redisNode("redis-2", ports[1], nil)
	ihost, iport, _ := net.SplitHostPort(replica.inner)
	replica.srv.first = []string{
		fmt.Sprintf("replicaof %s %s", host, port),
		"replica-announce-ip " + ihost,
		"replica-announce-port " + iport,
	}
	plainReady := replica.ready
	replica.ready = func(ctx context.Context) error {
		if err := plainReady(ctx); err != nil {
			return err
		}
		if replica.restarted {
			return nil // a plain master now
		}
		return replicaInSync(ctx, replica.Addr)
	}
	c.add(replica)
	if err := c.launchAll(ctx, []*node{replica}); err != nil {
		return err
	}
	var sents []*node
	for i := 0; i < 3; i++ {
		srv := server{master: master, downAfter: sentinelDownAfter(i)}
		s := c.newNode(fmt.Sprintf("sentinel-%d", i+1), KindSentinel, ports[2+i], srv)
		s.ready = func(ctx context.Context) error { return sentinelReady(ctx, s.Addr, s.restarted) }
		c.add(s)
		sents = append(sents, s)
	}
	return c.launchAll(ctx, sents)
}

func replicaInSync(ctx context.Context, addr string) error {
	v, err := redisDo(ctx, addr, time.Second, "INFO", "replication")
	if err != nil {
		return err
	}
	if s, _ := v.(string); !strings.Contains(s, "master_link_status:up") {
		return fmt.Errorf("replica not in sync yet")
	}
	return nil
}

// sentinelConfig is the config every sentinel of a run starts from (local and docker backends).
//
// Tuned for detection speed (the failover cells' time to detection): a quorum of 1 makes a
// sentinel's own SDOWN an ODOWN at once, without waiting for the others' answers (asked once a
// second). The leader election still needs a majority of the three sentinels. Measured on the
// local backend, kill to the first grant by the promoted replica: ≈3.1 s with quorum 2 and
// 1000 ms, ≈2.1 s so (5 of 5 runs). The sentinels reach the master directly, not through a
// proxy, so no fault but a failover's kill can make it look down.
func sentinelConfig(port int, dir, masterHost, masterPort string, downAfter time.Duration) []string {
	return []string{
		"bind 127.0.0.1",
		"protected-mode yes",
		fmt.Sprintf("port %d", port),
		fmt.Sprintf("dir %s", dir),
		`logfile ""`,
		"daemonize no",
		"set-proc-title no",
		fmt.Sprintf("sentinel monitor %s %s %s 1", sentinelMasterName, masterHost, masterPort),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", sentinelMasterName, downAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s 3000", sentinelMasterName),
		fmt.Sprintf("sentinel parallel-syncs %s 1", sentinelMasterName),
	}
}

// sentinelDownAfter is the down-after-milliseconds of the i-th sentinel (from 0): 500 ms for the
// first, a second more for each next one, so one sentinel always starts the failover alone.
//
// With quorum 1, a sentinel starts a failover, voting for itself, as soon as it finds the master
// down. When all three did so at 500 ms, on a loaded machine they could start within the ≈50 ms
// a vote request took to be answered, each voting for itself, and nobody won the majority: each
// gave up after the election timeout (the failover-timeout, 3 s) and tried again only 2 ×
// failover-timeout after its start, so the promotion came 6 s late (a CI run: the first grant by
// the promoted replica at 8.1 s, not 2.1 s, at the end of token+fence × failover's fault phase;
// here 5 of 32 runs of that cell, four at once beside two CPU-bound loops, the sentinels' logs
// saying -failover-abort-not-elected). Staggered, the first sentinel asks the others for their
// vote 1 s before they would find the master down themselves, and a sentinel that votes for
// another postpones its own failover (Sentinel's sentinelVoteLeader): 0 of 32 split, every
// promotion from the first election. Should that election fail anyway, the second sentinel
// starts its own at 1.5 s.
func sentinelDownAfter(i int) time.Duration {
	return 500*time.Millisecond + time.Duration(i)*time.Second
}

// sentinelReady says whether the sentinel at addr is ready: it knows the master and, on a fresh
// start, the other two sentinels and the replica.
func sentinelReady(ctx context.Context, addr string, restarted bool) error {
	if _, err := sentinelMasterAddr(ctx, addr); err != nil {
		return err
	}
	if restarted {
		return nil
	}
	// Sentinels find each other through hello messages on the master (every 2 s) and the
	// replica through the master's INFO; until then a failover cannot reach its quorum.
	if k, err := sentinelCount(ctx, addr, "SENTINELS"); err != nil || k < 2 {
		return fmt.Errorf("knows %d other sentinels (%v), want 2", k, err)
	}
	if k, err := sentinelCount(ctx, addr, "REPLICAS"); err != nil || k < 1 {
		return fmt.Errorf("knows %d replicas (%v), want 1", k, err)
	}
	return nil
}

func sentinelMasterAddr(ctx context.Context, addr string) (string, error) {
	return sentinelMasterAddrOf(ctx, addr, sentinelMasterName)
}

// sentinelMasterAddrOf asks the sentinel at addr where the master called name is.
func sentinelMasterAddrOf(ctx context.Context, addr, name string) (string, error) {
	v, err := redisDo(ctx, addr, time.Second, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)
	if err != nil {
		return "", err
	}
	a, _ := v.([]string)
	if len(a) != 2 {
		return "", fmt.Errorf("sentinel does not know master %s yet", name)
	}
	return a[0] + ":" + a[1], nil
}

func sentinelCount(ctx context.Context, addr, what string) (int, error) {
	v, err := redisDo(ctx, addr, time.Second, "SENTINEL", what, sentinelMasterName)
	if err != nil {
		return 0, err
	}
	a, _ := v.([]string)
	return len(a), nil
}

// sentinelMaster asks the sentinels in turn for the master's address and names its node (by the
// address other nodes know it at: docker's sentinels name containers).
func (c *topo) sentinelMaster(ctx context.Context) (string, error) {
	var errs []string
	for _, s := range c.sents {
		addr, err := sentinelMasterAddrOf(ctx, s.Addr, c.masterName())
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", s.Name, err))
			continue
		}
		for _, n := range c.data {
			if n.inner == addr {
				return n.Name, nil
			}
		}
		return "", fmt.Errorf("%s says the master is %s, which is none of %v", s.Name, addr, c.names())
	}
	return "", fmt.Errorf("no sentinel answered: %s", strings.Join(errs, "; "))
}

// masterName is the name the sentinels know the master by: the cluster file's on the external
// backend, else the one lockchaos configures.
func (c *topo) masterName() string {
	if c.spec.External != nil {
		return c.spec.External.MasterName
	}
	return sentinelMasterName
}

// sentinelContainer: Sentinel rewrites its config file (its state), so the file is written by sh
// inside the container on the first start only and kept on Restart, which starts the same
// container again. The sentinels resolve and announce names, so Sentinel tells clients
// "container:6379", which Endpoints.Dial maps to the client's proxy.
func sentinelContainer(e ContainerEnv, n *node, _ bool) (cmd, env []string) {
	host, port, _ := net.SplitHostPort(n.srv.master.inner)
	// Names, not addresses: a container's address changes when it is started again.
	lines := append([]string{"sentinel resolve-hostnames yes", "sentinel announce-hostnames yes"},
		sentinelConfig(sentinelPort, "/tmp", host, port, n.srv.downAfter)...)
	// Announced by name too, so the sentinels a client discovers through SENTINEL SENTINELS
	// are reached through its proxies (Dial), not directly at a container address.
	lines = append(lines, "bind 0.0.0.0", "protected-mode no",
		"sentinel announce-ip "+e.ContainerName(n.Name), fmt.Sprintf("sentinel announce-port %d", sentinelPort))
	quoted := make([]string, len(lines))
	for i, l := range lines {
		quoted[i] = "'" + l + "'" // no line has a single quote
	}
	script := "[ -f /tmp/sentinel.conf ] || printf '%s\\n' " + strings.Join(quoted, " ") +
		" > /tmp/sentinel.conf; exec redis-server /tmp/sentinel.conf --sentinel"
	return []string{"sh", "-c", script}, nil
}

// sentinelArgv writes a local sentinel's config. Sentinel rewrites its config file (it is its
// state), so each has its own, written fresh on the first start and kept on Restart: a restarted
// sentinel remembers what it knew.
func sentinelArgv(m *process, restart bool) ([]string, error) {
	n := m.n
	path := m.dir + "/sentinel.conf"
	if restart {
		if _, err := os.Stat(path); err == nil {
			return []string{redisSentinelBin, path}, nil
		}
	}
	host, mport, _ := strings.Cut(n.srv.master.inner, ":")
	path, err := writeConfig(m.dir, "sentinel.conf", sentinelConfig(n.ports[0], m.dir, host, mport, n.srv.downAfter))
	return []string{redisSentinelBin, path}, err
}
