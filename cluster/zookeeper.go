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
func (c *local) startZooKeeper(ctx context.Context) error {
	n := c.spec.Nodes
	ports, err := freePorts(3 * n)
	if err != nil {
		return err
	}
	var servers []string
	if n > 1 {
		for i := 0; i < n; i++ {
			servers = append(servers, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, ports[n+2*i], ports[n+2*i+1]))
		}
	}
	tick := c.spec.ZKTickTime.Milliseconds()
	for i := 0; i < n; i++ {
		nd := newNode(c.dir, fmt.Sprintf("zk-%d", i+1), KindZooKeeper, ports[i])
		nd.readyTimeout = 30 * time.Second
		id := i + 1
		nd.prepare = func(restart bool) ([]string, error) {
			data := filepath.Join(nd.dir, "data")
			if err := os.MkdirAll(data, 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", id)), 0o644); err != nil {
				return nil, err
			}
			lines := append([]string{
				fmt.Sprintf("tickTime=%d", tick),
				"initLimit=10",
				"syncLimit=5",
				"dataDir=" + data,
				fmt.Sprintf("clientPort=%d", nd.port),
				"clientPortAddress=127.0.0.1",
				"admin.enableServer=false",
				"4lw.commands.whitelist=*",
				// Let clients ask for session timeouts of many ticks (default max is 20 ticks).
				"maxSessionTimeout=60000",
			}, servers...)
			cfg, err := writeConfig(nd, "zoo.cfg", lines)
			argv := append([]string{javaBin}, zkJVMFlags...)
			argv = append(argv, "-Dzookeeper.log.dir="+nd.dir,
				"-cp", zookeeperJar+":"+slf4jSimpleJar,
				"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg)
			return argv, err
		}
		nd.ready = func(ctx context.Context) error {
			mode, err := zkMode(ctx, nd.Addr)
			if err != nil {
				return err
			}
			if mode == "" {
				return fmt.Errorf("not serving (no quorum yet)")
			}
			return nil
		}
		c.add(nd)
	}
	return c.launchAll(ctx, c.data)
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

func (c *local) zkLeader(ctx context.Context) (string, error) {
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
