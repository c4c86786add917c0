package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Ports inside the containers: the servers' defaults, as the official images expect.
const (
	redisPort     = 6379
	sentinelPort  = 26379
	zkClientPort  = 2181
	containerData = "/data"
)

// redisArgs turns config lines into redis-server arguments ("port 6379" → "--port", "6379"), so
// a container needs no config file. redis-server joins them back into config lines, quoting each
// argument, so a quoted empty value ("") must become an empty argument.
func redisArgs(lines []string) []string {
	var args []string
	for _, l := range lines {
		f := strings.Fields(l)
		args = append(args, "--"+f[0])
		for _, v := range f[1:] {
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
			args = append(args, v)
		}
	}
	return args
}

// redisNode is a redis-server container with the local backend's config (redisConfig), except
// that it listens on every interface of its container: only its published port on 127.0.0.1 and
// the run network reach it. extra is added on the first start only (replicaof).
func (c *docker) redisNode(name string, hostPort int, extra []string) *dnode {
	n := c.newNode(name, KindRedis, redisPort, hostPort, c.spec.RedisImage)
	n.readyTimeout = 15 * time.Second
	n.run = func(restart bool) ([]string, []string) {
		lines := redisConfig(&node{port: redisPort, dir: containerData})
		lines = append(lines, "bind 0.0.0.0", "protected-mode no")
		if !restart {
			lines = append(lines, extra...)
		}
		return append([]string{"redis-server"}, redisArgs(lines)...), nil
	}
	n.ready = func(ctx context.Context) error { return redisPing(ctx, n.Addr) }
	return n
}

func (c *docker) startRedisMasters(ctx context.Context) error {
	ports, err := freePorts(c.spec.Nodes)
	if err != nil {
		return err
	}
	for i, p := range ports {
		c.add(c.redisNode(fmt.Sprintf("redis-%d", i+1), p, nil))
	}
	return c.launchAll(ctx, c.data)
}

// startSentinelTopology is the local one on docker: the replica reaches the master through a
// proxy in the harness that listens on the run network's gateway, and announces its container
// name; the sentinels resolve and announce names, so Sentinel tells clients "container:6379",
// which Endpoints.Dial maps to the client's proxy.
func (c *docker) startSentinelTopology(ctx context.Context) error {
	if c.gateway == "" {
		return fmt.Errorf("docker network %s has no gateway address for the replication proxy", c.prefix())
	}
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	master := c.redisNode("redis-1", ports[0], nil)
	c.add(master)
	if err := c.launchAll(ctx, []*dnode{master}); err != nil {
		return err
	}
	c.replMaster = master.Name
	replAddr, err := c.px.addOn(linkKey{0, master.Name}, net.JoinHostPort(c.gateway, "0"), master.Addr)
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(replAddr)
	replica := c.redisNode("redis-2", ports[1], nil)
	replica.run = func(restart bool) ([]string, []string) {
		lines := redisConfig(&node{port: redisPort, dir: containerData})
		lines = append(lines, "bind 0.0.0.0", "protected-mode no")
		if !restart {
			lines = append(lines,
				fmt.Sprintf("replicaof %s %s", host, port),
				"replica-announce-ip "+replica.container,
				fmt.Sprintf("replica-announce-port %d", redisPort))
		}
		return append([]string{"redis-server"}, redisArgs(lines)...), nil
	}
	replica.ready = func(ctx context.Context) error {
		if err := redisPing(ctx, replica.Addr); err != nil {
			return err
		}
		if replica.restarted {
			return nil
		}
		return replicaInSync(ctx, replica.Addr)
	}
	c.add(replica)
	if err := c.launchAll(ctx, []*dnode{replica}); err != nil {
		return err
	}
	var sents []*dnode
	for i := 0; i < 3; i++ {
		s := c.sentinelNode(fmt.Sprintf("sentinel-%d", i+1), ports[2+i], master.container)
		c.add(s)
		sents = append(sents, s)
	}
	return c.launchAll(ctx, sents)
}

// sentinelNode is a redis-sentinel container. Sentinel rewrites its config file (its state), so
// the file is written by sh inside the container on the first start only and kept on Restart,
// which starts the same container again.
func (c *docker) sentinelNode(name string, hostPort int, master string) *dnode {
	n := c.newNode(name, KindSentinel, sentinelPort, hostPort, c.spec.RedisImage)
	n.reuse = true
	n.run = func(bool) ([]string, []string) {
		// Names, not addresses: a container's address changes when it is started again.
		lines := append([]string{"sentinel resolve-hostnames yes", "sentinel announce-hostnames yes"},
			sentinelConfig(sentinelPort, "/tmp", master, strconv.Itoa(redisPort))...)
		// Announced by name too, so the sentinels a client discovers through SENTINEL SENTINELS
		// are reached through its proxies (Dial), not directly at a container address.
		lines = append(lines, "bind 0.0.0.0", "protected-mode no",
			"sentinel announce-ip "+n.container, fmt.Sprintf("sentinel announce-port %d", sentinelPort))
		quoted := make([]string, len(lines))
		for i, l := range lines {
			quoted[i] = "'" + l + "'" // no line has a single quote
		}
		script := "[ -f /tmp/sentinel.conf ] || printf '%s\\n' " + strings.Join(quoted, " ") +
			" > /tmp/sentinel.conf; exec redis-server /tmp/sentinel.conf --sentinel"
		return []string{"sh", "-c", script}, nil
	}
	n.ready = func(ctx context.Context) error { return sentinelReady(ctx, n.Addr, n.restarted) }
	return n
}

// startZooKeeper starts the ensemble through the official zookeeper image's environment
// (ZOO_MY_ID, ZOO_SERVERS, ...), which lockchaos/zookeeper reads too, with the local backend's
// settings (zookeeper.go): tickTime from the spec, initLimit 10, syncLimit 5, sessions up to 60 s,
// and zkJVMFlags. Members find each other by container name on the run network.
func (c *docker) startZooKeeper(ctx context.Context) error {
	nodes := c.spec.Nodes
	ports, err := freePorts(nodes)
	if err != nil {
		return err
	}
	var servers []string
	for i := 0; i < nodes; i++ {
		servers = append(servers, fmt.Sprintf("server.%d=%s-zk-%d:2888:3888;%d", i+1, c.prefix(), i+1, zkClientPort))
	}
	for i := 0; i < nodes; i++ {
		n := c.newNode(fmt.Sprintf("zk-%d", i+1), KindZooKeeper, zkClientPort, ports[i], c.spec.ZooKeeperImage)
		n.reuse = true
		n.readyTimeout = 40 * time.Second
		env := []string{
			fmt.Sprintf("ZOO_MY_ID=%d", i+1),
			fmt.Sprintf("ZOO_TICK_TIME=%d", c.spec.ZKTickTime.Milliseconds()),
			"ZOO_INIT_LIMIT=10",
			"ZOO_SYNC_LIMIT=5",
			"ZOO_4LW_COMMANDS_WHITELIST=*",
			"ZOO_ADMINSERVER_ENABLED=false",
			"ZOO_CFG_EXTRA=maxSessionTimeout=60000 quorumListenOnAllIPs=true",
			"JVMFLAGS=" + strings.Join(zkJVMFlags, " "),
		}
		if nodes > 1 {
			env = append(env, "ZOO_SERVERS="+strings.Join(servers, " "))
		}
		n.run = func(bool) ([]string, []string) { return nil, env }
		n.ready = func(ctx context.Context) error {
			mode, err := zkMode(ctx, n.Addr)
			if err != nil {
				return err
			}
			if mode == "" {
				return fmt.Errorf("not serving (no quorum yet)")
			}
			return nil
		}
		c.add(n)
	}
	return c.launchAll(ctx, c.data)
}
