package cluster

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// command returns the command (nil: the image's) and environment of a container's start.
func (b *docker) command(m *dockerNode, restart bool) (cmd, env []string) {
	n := m.n
	switch n.Kind {
	case KindRedis:
		return b.redisCommand(n, restart), nil
	case KindSentinel:
		return b.sentinelCommand(m), nil
	case KindZooKeeper:
		return nil, b.zooKeeperEnv(n)
	}
	return nil, nil
}

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

// redisCommand is the local backend's config (redisConfig), except that the server listens on
// every interface of its container: only its published port on 127.0.0.1 and the run network
// reach it.
func (b *docker) redisCommand(n *node, restart bool) []string {
	lines := redisConfig(redisPort, containerData)
	lines = append(lines, "bind 0.0.0.0", "protected-mode no")
	if !restart {
		lines = append(lines, n.srv.first...)
	}
	return append([]string{"redis-server"}, redisArgs(lines)...)
}

// sentinelCommand: Sentinel rewrites its config file (its state), so the file is written by sh
// inside the container on the first start only and kept on Restart, which starts the same
// container again. The sentinels resolve and announce names, so Sentinel tells clients
// "container:6379", which Endpoints.Dial maps to the client's proxy.
func (b *docker) sentinelCommand(m *dockerNode) []string {
	host, port, _ := net.SplitHostPort(m.n.srv.master.inner)
	// Names, not addresses: a container's address changes when it is started again.
	lines := append([]string{"sentinel resolve-hostnames yes", "sentinel announce-hostnames yes"},
		sentinelConfig(sentinelPort, "/tmp", host, port, m.n.srv.downAfter)...)
	// Announced by name too, so the sentinels a client discovers through SENTINEL SENTINELS
	// are reached through its proxies (Dial), not directly at a container address.
	lines = append(lines, "bind 0.0.0.0", "protected-mode no",
		"sentinel announce-ip "+m.name, fmt.Sprintf("sentinel announce-port %d", sentinelPort))
	quoted := make([]string, len(lines))
	for i, l := range lines {
		quoted[i] = "'" + l + "'" // no line has a single quote
	}
	script := "[ -f /tmp/sentinel.conf ] || printf '%s\\n' " + strings.Join(quoted, " ") +
		" > /tmp/sentinel.conf; exec redis-server /tmp/sentinel.conf --sentinel"
	return []string{"sh", "-c", script}
}

// zooKeeperEnv configures a member through the official zookeeper image's environment
// (ZOO_MY_ID, ZOO_SERVERS, ...), which lockchaos/zookeeper reads too, with the local backend's
// settings (local_servers.go): tickTime from the spec, initLimit 10, syncLimit 5, sessions up to
// 60 s, and zkJVMFlags. Members find each other by container name on the run network.
func (b *docker) zooKeeperEnv(n *node) []string {
	env := []string{
		fmt.Sprintf("ZOO_MY_ID=%d", n.srv.id),
		fmt.Sprintf("ZOO_TICK_TIME=%d", b.spec.ZKTickTime.Milliseconds()),
		"ZOO_INIT_LIMIT=10",
		"ZOO_SYNC_LIMIT=5",
		"ZOO_4LW_COMMANDS_WHITELIST=*",
		"ZOO_ADMINSERVER_ENABLED=false",
		"ZOO_CFG_EXTRA=maxSessionTimeout=60000 quorumListenOnAllIPs=true",
		"JVMFLAGS=" + strings.Join(zkJVMFlags, " "),
	}
	if len(n.srv.ensemble) > 1 {
		var servers []string
		for _, e := range n.srv.ensemble {
			host, _, _ := net.SplitHostPort(e.inner)
			servers = append(servers, fmt.Sprintf("server.%d=%s:2888:3888;%d", e.srv.id, host, zkClientPort))
		}
		env = append(env, "ZOO_SERVERS="+strings.Join(servers, " "))
	}
	return env
}
