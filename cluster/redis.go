package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// redisServerBin is Debian's redis-server (a variable so a test or a packager can point elsewhere).
var redisServerBin = "redis-server"

// DefaultRedisMultiNodes is the number of redis-multi masters when Spec.Nodes is 0.
const DefaultRedisMultiNodes = 5

// redisNeeds is what redis-single and redis-multi need: redis-server, from Debian's redis-server.
func redisNeeds() []Requirement { return []Requirement{checkCommand(redisServerBin, "redis-server")} }

// redisDoctor is redisNeeds with redis-server's version, for doctor.
func redisDoctor() []Requirement {
	return []Requirement{withVersion(checkCommand(redisServerBin, "redis-server"), redisVersion)}
}

// redisImage is the docker image of every redis topology's servers.
func redisImage(s Spec) string { return s.RedisImage }

// firstNode names the first data node: the master of redis-single, and redis-multi's (each of its
// nodes is a master; the faults' "master" selector picks redis-1).
func firstNode(c *topo, _ context.Context) (string, error) { return c.data[0].Name, nil }

// redisPort is a redis container's port: the official image's.
const redisPort = 6379

func init() {
	// A restarted redis container is a fresh one: empty, as a restarted server without fsync.
	registerKind(KindRedis, kind{
		argv:        redisArgv,
		ready:       10 * time.Second,
		container:   &Container{Image: redisImage, Port: redisPort, Ready: 15 * time.Second, start: redisContainer},
		wire:        protoRESP,
		wireSupport: "Redis RESP2/RESP3 (EVAL and EVALSHA with their keys)",
		ping:        func(ctx context.Context, addr string, _ SQLLogin) error { return redisPing(ctx, addr) },
		external: func(n int) (string, error) {
			if n == 1 {
				return RedisSingle, nil
			}
			return RedisMulti, nil // independent masters (Redlock)
		},
	})
	registerTopology(RedisSingle, topology{
		family: "redis", clients: KindRedis, traits: []Trait{TraitKeyExpiry},
		nodes:      func(int) (int, error) { return 1, nil }, // Spec.Nodes is ignored
		needs:      redisNeeds,
		doctor:     redisDoctor,
		containers: []Kind{KindRedis},
		start:      (*topo).startRedisMasters,
		master:     firstNode,
	})
	registerTopology(RedisMulti, topology{
		family: "redlock", clients: KindRedis, traits: []Trait{TraitKeyExpiry, TraitQuorum, TraitIndependentNodes},
		nodes: func(n int) (int, error) {
			if n == 0 {
				return DefaultRedisMultiNodes, nil
			}
			return n, nil
		},
		needs:      redisNeeds,
		doctor:     redisDoctor,
		containers: []Kind{KindRedis},
		start:      (*topo).startRedisMasters,
		master:     firstNode,
	})
}

// redisConfig is what every redis-server of a run shares: loopback only, nothing on disk (a
// restart is empty, docs/design.md#faults), and the original argv kept as the process title so the
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

// redisContainer runs the local backend's config (redisConfig), except that the server listens on
// every interface of its container: only its published port on 127.0.0.1 and the run network
// reach it.
func redisContainer(_ ContainerEnv, n *node, restart bool) (cmd, env []string) {
	lines := redisConfig(redisPort, containerData)
	lines = append(lines, "bind 0.0.0.0", "protected-mode no")
	if !restart {
		lines = append(lines, n.srv.first...)
	}
	lines = append(lines, n.srv.conf...)
	return append([]string{"redis-server"}, redisArgs(lines)...), nil
}

// redisArgv writes a local redis-server's config: redisConfig, and at its first start the node's
// first lines (a replica's replicaof).
func redisArgv(m *process, restart bool) ([]string, error) {
	lines := redisConfig(m.n.ports[0], m.dir)
	if !restart {
		lines = append(lines, m.n.srv.first...)
	}
	// A replica that did a full sync may have left an RDB file behind; a restart is empty.
	_ = os.Remove(filepath.Join(m.dir, "dump.rdb"))
	path, err := writeConfig(m.dir, "redis.conf", lines)
	return []string{redisServerBin, path}, err
}
