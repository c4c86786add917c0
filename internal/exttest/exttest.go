// Package exttest sets up "someone else's cluster" for the external backend's tests: a real
// toxiproxy-server built from the toxiproxy module, and real servers started outside lockchaos,
// all on 127.0.0.1 and stopped when the test ends.
package exttest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	toxiclient "github.com/lockchaos/lockchaos/third_party/toxiproxy/client"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// need skips the test when what is missing is not there, unless LOCKCHAOS_REQUIRE_SERVERS=1 asks
// for it, where it fails.
func need(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	testenv.Missing(t, testenv.RequireServers, err.Error())
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// ToxiproxyBinary builds toxiproxy-server from the module lockchaos depends on (once per test
// binary, cached in the temp dir across runs).
func ToxiproxyBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), "lockchaos-exttest")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			buildOnce.err = err
			return
		}
		path := filepath.Join(dir, "toxiproxy-server-v2.5.0")
		if _, err := os.Stat(path); err == nil {
			buildOnce.path = path
			return
		}
		tmp := fmt.Sprintf("%s.%d", path, os.Getpid())
		out, err := exec.Command("go", "build", "-o", tmp, "github.com/lockchaos/lockchaos/third_party/toxiproxy/cmd/server").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build toxiproxy-server: %v: %s", err, out)
			return
		}
		buildOnce.path, buildOnce.err = path, os.Rename(tmp, path)
	})
	if buildOnce.err != nil {
		t.Fatalf("%v", buildOnce.err)
	}
	return buildOnce.path
}

// FreePort returns a port free on 127.0.0.1 now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Toxiproxy starts a toxiproxy-server on 127.0.0.1 and returns its API address; it is killed
// when the test ends.
func Toxiproxy(t testing.TB) string {
	t.Helper()
	testenv.Servers(t)
	bin := ToxiproxyBinary(t)
	port := FreePort(t)
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	waitFor(t, addr, func() error { _, err := toxiclient.NewClient(addr).Proxies(); return err })
	return addr
}

// Proxies lists the names of the proxies on the toxiproxy-server at api that start with prefix.
func Proxies(t testing.TB, api, prefix string) []string {
	t.Helper()
	ps, err := toxiclient.NewClient(api).Proxies()
	if err != nil {
		t.Fatalf("list proxies of %s: %v", api, err)
	}
	var out []string
	for name := range ps {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out
}

// Redis is a redis-server started outside lockchaos, as an operator's would be: daemonized,
// with a pidfile, and with shell commands that kill and restart it.
type Redis struct {
	Addr    string
	Kill    string // shell command: SIGKILL the server
	Restart string // shell command: kill it and start it again, empty
	Pause   string
	Resume  string
	pidfile string
}

// StartRedis starts a redis-server on a free port of 127.0.0.1 (no persistence: a restart is
// empty); it is killed when the test ends.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	testenv.Servers(t)
	bin, err := exec.LookPath("redis-server")
	need(t, err)
	dir := t.TempDir()
	port := FreePort(t)
	conf := filepath.Join(dir, "redis.conf")
	pidfile := filepath.Join(dir, "redis.pid")
	body := strings.Join([]string{
		"bind 127.0.0.1", "port " + strconv.Itoa(port), "dir " + dir, `save ""`, "appendonly no",
		"daemonize yes", "pidfile " + pidfile, "logfile " + filepath.Join(dir, "redis.log"),
	}, "\n") + "\n"
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), pidfile: pidfile}
	start := fmt.Sprintf("%s %s", bin, conf)
	r.Kill = fmt.Sprintf("kill -9 $(cat %s)", pidfile)
	// Wait until the old server is gone (its port free) before starting the new one. A killed
	// daemon is a zombie until init reaps it, which can take seconds: dead is state Z or gone.
	r.Restart = fmt.Sprintf(`p=$(cat %[1]s); kill -9 $p; while s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null) && [ "${s%%%% *}" != Z ]; do sleep 0.01; done; rm -f %[1]s; %[2]s`, pidfile, start)
	r.Pause = fmt.Sprintf("kill -STOP $(cat %s)", pidfile)
	r.Resume = fmt.Sprintf("kill -CONT $(cat %s)", pidfile)
	if out, err := exec.Command("sh", "-c", start).CombinedOutput(); err != nil {
		t.Fatalf("start redis-server: %v: %s", err, out)
	}
	t.Cleanup(r.stop)
	waitFor(t, r.Addr, func() error { return dial(r.Addr) })
	return r
}

// stop kills the server that runs now (a restart command may have replaced the first one).
func (r *Redis) stop() {
	for range 50 {
		b, err := os.ReadFile(r.pidfile)
		if err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				return
			}
		}
		time.Sleep(20 * time.Millisecond) // a restart's new server writes its pidfile late
	}
}

func dial(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

func waitFor(t testing.TB, what string, f func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s not up after 15s: %v", what, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Node is one node of a cluster file.
type Node struct {
	Name, Kind, Address, Toxiproxy string
	Kill, Restart, Pause, Resume   string
	Extra                          string // raw YAML lines added to the node (for bad-input tests)
}

// WriteClusterFile writes a cluster file of nodes into dir and returns its path.
func WriteClusterFile(t testing.TB, dir string, nodes ...Node) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("nodes:\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "  - name: %s\n    kind: %s\n    address: %q\n", n.Name, n.Kind, n.Address)
		for _, kv := range [][2]string{{"toxiproxy", n.Toxiproxy}, {"kill", n.Kill}, {"restart", n.Restart}, {"pause", n.Pause}, {"resume", n.Resume}} {
			if kv[1] != "" {
				fmt.Fprintf(&b, "    %s: %q\n", kv[0], kv[1])
			}
		}
		if n.Extra != "" {
			fmt.Fprintf(&b, "    %s\n", n.Extra)
		}
	}
	path := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// StartZooKeeper starts a one-member ZooKeeper with the local backend's helpers (a child process
// that dies with the test) and returns its client address. To lockchaos under test it is just
// an address in a cluster file.
func StartZooKeeper(t testing.TB) string { return StartLocal(t, cluster.ZooKeeper)[0].Addr }

// StartEtcd starts a one-member etcd as StartZooKeeper does and returns its client address.
func StartEtcd(t testing.TB) string { return StartLocal(t, cluster.Etcd)[0].Addr }

// StartLocal starts a topology (one member where it has members) with the local backend and
// returns its nodes: a master, a replica and three sentinels for redis-sentinel, whose sentinels
// know the master as "lockchaos".
func StartLocal(t testing.TB, topology string) []cluster.Node {
	t.Helper()
	testenv.Servers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nodes := 1
	if topology == cluster.RedisSentinel {
		nodes = 0
	}
	c, err := cluster.Start(ctx, cluster.Spec{Topology: topology, Nodes: nodes, Dir: t.TempDir()})
	if errors.Is(err, cluster.ErrMissingBinary) {
		need(t, err)
	}
	if err != nil {
		t.Fatalf("start %s: %v", topology, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.Nodes()
}
