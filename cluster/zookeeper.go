package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Where the local backend finds ZooKeeper (Debian packages zookeeper, libslf4j-java,
// default-jre-headless). Variables so a test or a packager can point elsewhere.
var (
	javaBin        = "java"
	zookeeperJar   = "/usr/share/java/zookeeper.jar"
	slf4jSimpleJar = "/usr/share/java/slf4j-simple.jar"
	slf4jAPIJar    = "/usr/share/java/slf4j-api.jar"
)

// DefaultZooKeeperNodes is the size of an ensemble when Spec.Nodes is 0.
const DefaultZooKeeperNodes = 3

// zkClientPort is a member container's client port: the official image's.
const zkClientPort = 2181

func init() {
	// A member's data dir is its state: Restart starts the same container again.
	registerKind(KindZooKeeper, kind{
		argv:        zooKeeperArgv,
		ports:       3, // the client port, the quorum's and the election's
		ready:       30 * time.Second,
		container:   &Container{Image: func(s Spec) string { return s.ZooKeeperImage }, Port: zkClientPort, Reuse: true, Ready: 40 * time.Second, start: zooKeeperContainer},
		wire:        protoZooKeeper,
		wireSupport: "ZooKeeper's framing (connect, requests by opcode and path, replies by xid, watch events)",
		ping:        func(ctx context.Context, addr string, _ SQLLogin) error { return zkServing(ctx, addr) },
		external:    externalMembers(KindZooKeeper, ZooKeeper),
	})
	registerTopology(ZooKeeper, topology{
		family: "zookeeper", clients: KindZooKeeper, traits: []Trait{TraitQuorum, TraitSessionLease},
		nodes: func(n int) (int, error) {
			if n == 0 {
				n = DefaultZooKeeperNodes
			}
			if n%2 == 0 {
				return n, fmt.Errorf("zookeeper with %d nodes (use an odd number: 1 or 3)", n)
			}
			return n, nil
		},
		// A start checks what the servers cannot run without; slf4j-simple, which only their
		// logging uses, doctor reports.
		needs: func() []Requirement {
			return []Requirement{checkCommand(javaBin, "default-jre-headless"), checkFile(zookeeperJar, "zookeeper"), checkFile(slf4jAPIJar, "libslf4j-java")}
		},
		doctor: func() []Requirement {
			return []Requirement{
				withVersion(checkCommand(javaBin, "default-jre-headless"), javaVersion),
				withVersion(checkFile(zookeeperJar, "zookeeper"), jarVersion),
				withVersion(checkFile(slf4jAPIJar, "libslf4j-java"), jarVersion),
				withVersion(checkFile(slf4jSimpleJar, "libslf4j-java"), jarVersion),
			}
		},
		containers: []Kind{KindZooKeeper},
		start:      (*topo).startZooKeeper,
		master: func(*topo, context.Context) (string, error) {
			return "", fmt.Errorf("topology %s has no master (use Leader)", ZooKeeper)
		},
		leader: (*topo).zkLeader,
	})
}

// zkJVMFlags keep a member small and quick to start on a shared 2-core machine: ZooKeeper needs
// little heap, C1 only and CDS shorten JVM start-up, serial GC avoids GC threads per core.
// forceSync=no skips fsync: our faults kill processes, not machines, so the page cache survives
// and durability is unchanged. trust.empty lets a member restart from transaction logs alone.
var zkJVMFlags = []string{
	"-Xmx256m", "-Xms32m", "-Xss512k",
	"-XX:TieredStopAtLevel=1", "-Xshare:auto", "-XX:+UseSerialGC", "-XX:-UsePerfData",
	"-Djava.net.preferIPv4Stack=true",
	"-Dzookeeper.forceSync=no",
	"-Dzookeeper.snapshot.trust.empty=true",
	"-Dzookeeper.admin.enableServer=false",
	"-Dzookeeper.jmx.log4j.disable=true",
}

// startZooKeeper starts an ensemble of spec.Nodes members (one member runs standalone). Quorum
// and election links go direct; only client links are proxied.
func (c *topo) startZooKeeper(ctx context.Context) error {
	ports, err := c.portsFor(repeat(KindZooKeeper, c.spec.Nodes)...)
	if err != nil {
		return err
	}
	var ensemble []*node
	for i := range c.spec.Nodes {
		nd := c.newNode(fmt.Sprintf("zk-%d", i+1), KindZooKeeper, ports[i], server{id: i + 1})
		nd.ready = func(ctx context.Context) error { return zkServing(ctx, nd.Addr) }
		ensemble = append(ensemble, nd)
		c.add(nd)
	}
	for _, nd := range ensemble {
		nd.srv.ensemble = ensemble
	}
	return c.launchAll(ctx, c.data)
}

// zkServing is nil once the member serves: a member without a quorum answers, but with no mode.
func zkServing(ctx context.Context, addr string) error {
	mode, err := zkMode(ctx, addr)
	if err != nil {
		return err
	}
	if mode == "" {
		return fmt.Errorf("not serving (no quorum yet)")
	}
	return nil
}

// zk4lw sends a ZooKeeper four-letter word and returns the whole answer.
func zk4lw(ctx context.Context, addr, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// zkMode returns the member's srvr Mode (leader, follower, standalone), or "" when it is up but
// not serving, which is what a member without a quorum answers.
func zkMode(ctx context.Context, addr string) (string, error) {
	out, err := zk4lw(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", nil
}

func (c *topo) zkLeader(ctx context.Context) (string, error) {
	var errs []string
	for _, n := range c.data {
		mode, err := zkMode(ctx, n.Addr)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s: %v", n.Name, err))
		case mode == "leader" || mode == "standalone":
			return n.Name, nil
		}
	}
	return "", fmt.Errorf("no ZooKeeper leader now (%s)", strings.Join(errs, "; "))
}

// zooKeeperContainer configures a member through the official zookeeper image's environment
// (ZOO_MY_ID, ZOO_SERVERS, ...), which lockchaos/zookeeper reads too, with the local backend's
// settings (local_servers.go): tickTime from the spec, initLimit 10, syncLimit 5, sessions up to
// 60 s, and zkJVMFlags. Members find each other by container name on the run network.
func zooKeeperContainer(e ContainerEnv, n *node, _ bool) (cmd, env []string) {
	env = []string{
		fmt.Sprintf("ZOO_MY_ID=%d", n.srv.id),
		fmt.Sprintf("ZOO_TICK_TIME=%d", e.Spec().ZKTickTime.Milliseconds()),
		"ZOO_INIT_LIMIT=10",
		"ZOO_SYNC_LIMIT=5",
		"ZOO_4LW_COMMANDS_WHITELIST=*",
		"ZOO_ADMINSERVER_ENABLED=false",
		"ZOO_CFG_EXTRA=maxSessionTimeout=60000 quorumListenOnAllIPs=true",
		"JVMFLAGS=" + strings.Join(zkJVMFlags, " "),
	}
	if len(n.srv.ensemble) > 1 {
		var servers []string
		for _, p := range n.srv.ensemble {
			host, _, _ := net.SplitHostPort(p.inner)
			servers = append(servers, fmt.Sprintf("server.%d=%s:2888:3888;%d", p.srv.id, host, zkClientPort))
		}
		env = append(env, "ZOO_SERVERS="+strings.Join(servers, " "))
	}
	return nil, env
}

// zooKeeperArgv writes a member's myid and zoo.cfg for the local backend; its data dir survives a
// restart.
func zooKeeperArgv(m *process, _ bool) ([]string, error) {
	n, b := m.n, m.b
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
