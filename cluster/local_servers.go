package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// argv writes the config of m's server into its dir and returns its command line.
func (b *local) argv(m *process, restart bool) ([]string, error) {
	n := m.n
	switch {
	case n.srv.argv != nil:
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return nil, err
		}
		return n.srv.argv(m.dir), nil
	case n.Kind == KindRedis:
		lines := redisConfig(n.ports[0], m.dir)
		if !restart {
			lines = append(lines, n.srv.first...)
		}
		// A replica that did a full sync may have left an RDB file behind; a restart is empty.
		_ = os.Remove(filepath.Join(m.dir, "dump.rdb"))
		path, err := writeConfig(m.dir, "redis.conf", lines)
		return []string{redisServerBin, path}, err
	case n.Kind == KindSentinel:
		// Sentinel rewrites its config file (it is its state), so each has its own, written fresh
		// on the first start and kept on Restart: a restarted sentinel remembers what it knew.
		path := m.dir + "/sentinel.conf"
		if restart {
			if _, err := os.Stat(path); err == nil {
				return []string{redisSentinelBin, path}, nil
			}
		}
		host, mport, _ := strings.Cut(n.srv.master.inner, ":")
		path, err := writeConfig(m.dir, "sentinel.conf", sentinelConfig(n.ports[0], m.dir, host, mport, n.srv.downAfter))
		return []string{redisSentinelBin, path}, err
	case n.Kind == KindZooKeeper:
		return b.zooKeeperArgv(m)
	}
	return nil, fmt.Errorf("the local backend cannot run a %s node", n.Kind)
}

// zooKeeperArgv writes a member's myid and zoo.cfg; its data dir survives a restart.
func (b *local) zooKeeperArgv(m *process) ([]string, error) {
	n := m.n
	data := filepath.Join(m.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", n.srv.id)), 0o644); err != nil {
		return nil, err
	}
	lines := []string{
		fmt.Sprintf("tickTime=%d", b.spec.ZKTickTime.Milliseconds()),
		"initLimit=10",
		"syncLimit=5",
		"dataDir=" + data,
		fmt.Sprintf("clientPort=%d", n.ports[0]),
		"clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"4lw.commands.whitelist=*",
		// Let clients ask for session timeouts of many ticks (default max is 20 ticks).
		"maxSessionTimeout=60000",
	}
	if len(n.srv.ensemble) > 1 {
		for _, e := range n.srv.ensemble {
			lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", e.srv.id, e.ports[1], e.ports[2]))
		}
	}
	cfg, err := writeConfig(m.dir, "zoo.cfg", lines)
	argv := append([]string{javaBin}, zkJVMFlags...)
	if f := zkArchiveFlag(); f != "" {
		argv = append(argv, f)
	}
	argv = append(argv, "-Dzookeeper.log.dir="+m.dir,
		"-cp", zookeeperJar+":"+slf4jSimpleJar,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg)
	return argv, err
}

// writeConfig writes lines to a config file in dir and returns its path.
func writeConfig(dir, file string, lines []string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, file)
	return path, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}
