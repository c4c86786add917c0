package cluster

import (
	"context"
	"fmt"
	"time"
)

// redisConfig is what every redis-server of a run shares: loopback only, nothing on disk (a
// restart is empty, DESIGN.md §4), and the original argv kept as the process title so the
// config path in the run dir stays visible in /proc/PID/cmdline (tests find leaked servers by it).
// port and dir are as the server sees them (docker: inside its container).
func redisConfig(port int, dir string) []string {
	return []string{
		"bind 127.0.0.1",
		"protected-mode yes",
		fmt.Sprintf("port %d", port),
		fmt.Sprintf("dir %s", dir),
		`save ""`,
		"appendonly no",
		`logfile ""`,
		"daemonize no",
		"set-proc-title no",
		"repl-diskless-sync yes",
		"repl-diskless-sync-delay 0",
	}
}

// redisNode returns a redis-server node; first adds config lines on the first start only
// (replicaof: a restarted node is a plain, empty master).
func (c *topo) redisNode(name string, ports []int, first []string) *node {
	n := c.newNode(name, KindRedis, ports, server{first: first})
	n.ready = func(ctx context.Context) error { return redisPing(ctx, n.Addr) }
	return n
}

func redisPing(ctx context.Context, addr string) error {
	v, err := redisDo(ctx, addr, time.Second, "PING")
	if err != nil {
		return err
	}
	if v != "PONG" {
		return fmt.Errorf("PING answered %v", v)
	}
	return nil
}

// startRedisMasters starts redis-single and redis-multi: independent masters.
func (c *topo) startRedisMasters(ctx context.Context) error {
	ports, err := c.portsFor(repeat(KindRedis, c.spec.Nodes)...)
	if err != nil {
		return err
	}
	for i, p := range ports {
		c.add(c.redisNode(fmt.Sprintf("redis-%d", i+1), p, nil))
	}
	return c.launchAll(ctx, c.data)
}
