package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// sentinelMasterName is the name the sentinels monitor the master under (Endpoints.MasterName).
const sentinelMasterName = "lockchaos"

// startSentinelTopology starts a master (redis-1), a replica (redis-2) whose replication link
// goes through its own proxy so a fault can cut it, then three sentinels. It returns once the
// replica is in sync and every sentinel knows the master, the replica and the other sentinels,
// so a failover can happen from the first moment of a run.
func (c *local) startSentinelTopology(ctx context.Context) error {
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	master := newRedisNode(c.dir, "redis-1", ports[0], nil)
	c.add(master)
	if err := c.launchAll(ctx, []*node{master}); err != nil {
		return err
	}
	c.replMaster = master.Name
	replAddr, err := c.px.add(linkKey{0, master.Name}, master.Addr)
	if err != nil {
		return err
	}
	host, port, _ := strings.Cut(replAddr, ":")
	replica := newRedisNode(c.dir, "redis-2", ports[1], []string{
		fmt.Sprintf("replicaof %s %s", host, port),
		// The master sees the replica's connection come from the proxy; announcing the real
		// address makes Sentinel (which reads the master's INFO) promote the right server.
		"replica-announce-ip 127.0.0.1",
		fmt.Sprintf("replica-announce-port %d", ports[1]),
	})
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
		s := newSentinelNode(c.dir, fmt.Sprintf("sentinel-%d", i+1), ports[2+i], master.Addr)
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

// newSentinelNode returns a sentinel monitoring masterAddr. Sentinel rewrites its config file
// (it is its state), so each has its own, written fresh on the first start and kept on Restart:
// a restarted sentinel remembers what it knew, as a real one does.
func newSentinelNode(runDir, name string, port int, masterAddr string) *node {
	n := newNode(runDir, name, KindSentinel, port)
	n.readyTimeout = 15 * time.Second
	host, mport, _ := strings.Cut(masterAddr, ":")
	n.prepare = func(restart bool) ([]string, error) {
		path := n.dir + "/sentinel.conf"
		if restart {
			if _, err := os.Stat(path); err == nil {
				return []string{redisSentinelBin, path}, nil
			}
		}
		path, err := writeConfig(n, "sentinel.conf", sentinelConfig(n.port, n.dir, host, mport))
		return []string{redisSentinelBin, path}, err
	}
	n.ready = func(ctx context.Context) error { return sentinelReady(ctx, n.Addr, n.restarted) }
	return n
}

// sentinelConfig is the config every sentinel of a run starts from (local and docker backends).
func sentinelConfig(port int, dir, masterHost, masterPort string) []string {
	return []string{
		"bind 127.0.0.1",
		"protected-mode yes",
		fmt.Sprintf("port %d", port),
		fmt.Sprintf("dir %s", dir),
		`logfile ""`,
		"daemonize no",
		"set-proc-title no",
		fmt.Sprintf("sentinel monitor %s %s %s 2", sentinelMasterName, masterHost, masterPort),
		fmt.Sprintf("sentinel down-after-milliseconds %s 1000", sentinelMasterName),
		fmt.Sprintf("sentinel failover-timeout %s 3000", sentinelMasterName),
		fmt.Sprintf("sentinel parallel-syncs %s 1", sentinelMasterName),
	}
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
	v, err := redisDo(ctx, addr, time.Second, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", sentinelMasterName)
	if err != nil {
		return "", err
	}
	a, _ := v.([]string)
	if len(a) != 2 {
		return "", fmt.Errorf("sentinel does not know master %s yet", sentinelMasterName)
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

// sentinelMaster asks the sentinels in turn for the master's address and names its node.
func (c *local) sentinelMaster(ctx context.Context) (string, error) {
	var errs []string
	for _, s := range c.sents {
		addr, err := sentinelMasterAddr(ctx, s.Addr)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", s.Name, err))
			continue
		}
		for _, n := range c.data {
			if n.Addr == addr {
				return n.Name, nil
			}
		}
		return "", fmt.Errorf("%s says the master is %s, which is none of %v", s.Name, addr, c.names())
	}
	return "", fmt.Errorf("no sentinel answered: %s", strings.Join(errs, "; "))
}
