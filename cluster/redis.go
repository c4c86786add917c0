package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// redisConfig is what every redis-server of a run shares: loopback only, nothing on disk (a
// restart is empty, DESIGN.md §4), and the original argv kept as the process title so the
// config path in the run dir stays visible in /proc/PID/cmdline (tests find leaked servers by it).
func redisConfig(n *node) []string {
	return []string{
		"bind 127.0.0.1",
		"protected-mode yes",
		fmt.Sprintf("port %d", n.port),
		fmt.Sprintf("dir %s", n.dir),
		`save ""`,
		"appendonly no",
		`logfile ""`,
		"daemonize no",
		"set-proc-title no",
		"repl-diskless-sync yes",
		"repl-diskless-sync-delay 0",
	}
}

// writeConfig writes lines to the node's config file and returns its path.
func writeConfig(n *node, file string, lines []string) (string, error) {
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(n.dir, file)
	return path, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// newRedisNode returns a redis-server node; extra adds config lines on the first start only
// (replicaof: a restarted node is a plain, empty master).
func newRedisNode(runDir, name string, port int, extra []string) *node {
	n := newNode(runDir, name, KindRedis, port)
	n.readyTimeout = 10 * time.Second
	n.prepare = func(restart bool) ([]string, error) {
		lines := redisConfig(n)
		if !restart {
			lines = append(lines, extra...)
		}
		// A replica that did a full sync may have left an RDB file behind; a restart is empty.
		_ = os.Remove(filepath.Join(n.dir, "dump.rdb"))
		path, err := writeConfig(n, "redis.conf", lines)
		return []string{redisServerBin, path}, err
	}
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
func (c *local) startRedisMasters(ctx context.Context) error {
	ports, err := freePorts(c.spec.Nodes)
	if err != nil {
		return err
	}
	for i, p := range ports {
		c.add(newRedisNode(c.dir, fmt.Sprintf("redis-%d", i+1), p, nil))
	}
	return c.launchAll(ctx, c.data)
}
