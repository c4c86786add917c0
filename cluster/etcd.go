package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Etcd is the etcd topology: 1 or 3 etcd members (docs/design.md#topologies-and-backends), from Debian's etcd-server; on
// the docker backend, containers of the etcd image (make images builds lockchaos/etcd).
const Etcd = "etcd"

// KindEtcd is an etcd member.
const KindEtcd Kind = "etcd"

// DefaultEtcdNodes is the size of an etcd cluster when Spec.Nodes is 0.
const DefaultEtcdNodes = 3

// etcdBin is Debian's etcd-server binary (a variable so a test or a packager can point elsewhere).
var etcdBin = "etcd"

// etcdFlags are what a member runs with beyond its addresses. Everything else is etcd's default,
// fsync of the WAL included (etcd 3.4 has no --unsafe-no-fsync).
//
// Only the raft timing is changed, for speed: etcd grants no lease shorter than 1.5 election
// timeouts, so with the default 1 s timeout every lease lasts at least 2 s, whatever TTL the
// client asks. A 50 ms heartbeat and a 500 ms election timeout (the 1:10 ratio etcd's tuning
// guide asks for) bring that floor to 750 ms, so the catalogue's 1 s sessions are what the server
// enforces. Loopback round trips are far below 50 ms, so elections stay rare.
var etcdFlags = []string{
	"--heartbeat-interval=50",
	"--election-timeout=500",
	"--logger=zap",
	"--log-outputs=stderr",
	"--log-level=warn",
}

// etcd's ports in a container: the official image's client and peer ports.
const (
	etcdClientPort = 2379
	etcdPeerPort   = 2380
)

func init() {
	// A member's data dir is its identity in the cluster: a restart keeps it (reuse), as the
	// local backend keeps the node's dir.
	registerKind(KindEtcd, kind{
		container: &Container{Image: func(s Spec) string { return s.EtcdImage }, Port: etcdClientPort,
			Reuse: true, start: etcdContainer},
		wireSupport: "not parsed: etcd speaks gRPC over HTTP/2, not parsed until measured as cheap (its slow-release and latency are timed faults on its links)",
		ping:        func(ctx context.Context, addr string, _ SQLLogin) error { return etcdHealthy(ctx, addr) },
		external:    externalMembers(KindEtcd, Etcd),
	})
	registerTopology(Etcd, topology{
		family: "etcd", clients: KindEtcd, traits: []Trait{TraitQuorum},
		nodes: func(n int) (int, error) {
			switch {
			case n == 0:
				return DefaultEtcdNodes, nil
			case n%2 == 0:
				return n, fmt.Errorf("etcd with %d nodes (use an odd number: 1 or 3)", n)
			}
			return n, nil
		},
		needs: func() []Requirement {
			return []Requirement{withVersion(checkCommand(etcdBin, "etcd-server"), etcdVersion)}
		},
		containers: []Kind{KindEtcd},
		start:      (*topo).startEtcd,
		leader:     (*topo).etcdLeader,
	})
}

// startEtcd starts spec.Nodes members as one cluster. Peer links go direct; only client links
// are proxied. A member's data dir lives in its node dir and survives Restart (a process
// restart, as for ZooKeeper: an empty member would need to be removed and re-added).
func (c *topo) startEtcd(ctx context.Context) error {
	n := c.spec.Nodes
	ports, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	names := make([]string, n)
	var peers []string
	for i := range n {
		names[i] = fmt.Sprintf("etcd-%d", i+1)
		peers = append(peers, fmt.Sprintf("%s=http://%s", names[i], localAddr(ports[n+i])))
	}
	// A token per run keeps members of different runs from ever joining each other.
	token := "lockchaos-" + c.be.runID()
	for i := range n {
		argv := func(dir string) []string {
			client, peer := "http://"+localAddr(ports[i]), "http://"+localAddr(ports[n+i])
			return append([]string{etcdBin,
				"--name=" + names[i],
				"--data-dir=" + filepath.Join(dir, "data"),
				"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
				"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
				"--initial-cluster=" + strings.Join(peers, ","),
				"--initial-cluster-state=new", "--initial-cluster-token=" + token,
			}, etcdFlags...)
		}
		nd := c.newNode(names[i], KindEtcd, []int{ports[i], ports[n+i]}, server{argv: argv, token: token})
		nd.ready = func(ctx context.Context) error { return etcdHealthy(ctx, nd.Addr) }
		c.add(nd)
	}
	for _, nd := range c.data {
		nd.srv.ensemble = c.data // the docker backend's containers name their peers by container
	}
	// In parallel: a member is healthy only once a quorum of its peers runs.
	return c.launchAll(ctx, c.data)
}

// etcdContainer runs a member with the local backend's flags, on every address of its container,
// its peers named by their containers' names on the run network. A restart of the reused
// container finds its data dir and rejoins (--initial-cluster-state is read only at the first
// start).
func etcdContainer(_ ContainerEnv, n *node, _ bool) (cmd, env []string) {
	url := func(n *node, port int) string {
		host, _, _ := net.SplitHostPort(n.inner)
		return "http://" + net.JoinHostPort(host, strconv.Itoa(port))
	}
	var peers []string
	for _, p := range n.srv.ensemble {
		peers = append(peers, p.Name+"="+url(p, etcdPeerPort))
	}
	return append([]string{"etcd",
		"--name=" + n.Name,
		"--data-dir=" + containerData + "/etcd",
		"--listen-client-urls=http://0.0.0.0:" + strconv.Itoa(etcdClientPort), "--advertise-client-urls=" + url(n, etcdClientPort),
		"--listen-peer-urls=http://0.0.0.0:" + strconv.Itoa(etcdPeerPort), "--initial-advertise-peer-urls=" + url(n, etcdPeerPort),
		"--initial-cluster=" + strings.Join(peers, ","),
		"--initial-cluster-state=new", "--initial-cluster-token=" + n.srv.token,
	}, etcdFlags...), nil
}

// etcdGet fetches an HTTP path of a member's client URL.
func etcdGet(ctx context.Context, addr, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// etcdHealthy is nil once the member answers /health with true, which etcd does only when the
// cluster has a leader and the member can serve reads through it.
func etcdHealthy(ctx context.Context, addr string) error {
	body, err := etcdGet(ctx, addr, "/health")
	if err != nil {
		return err
	}
	if !strings.Contains(body, `"health":"true"`) {
		return fmt.Errorf("/health: %s", strings.TrimSpace(body))
	}
	return nil
}

// etcdIsLeader reads the member's own view from its metrics (no client library needed).
func etcdIsLeader(ctx context.Context, addr string) (bool, error) {
	body, err := etcdGet(ctx, addr, "/metrics")
	if err != nil {
		return false, err
	}
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, "etcd_server_is_leader "); ok {
			return strings.TrimSpace(v) == "1", nil
		}
	}
	return false, fmt.Errorf("no etcd_server_is_leader in /metrics")
}

func (c *topo) etcdLeader(ctx context.Context) (string, error) {
	var errs []string
	for _, n := range c.data {
		lead, err := etcdIsLeader(ctx, n.Addr)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s: %v", n.Name, err))
		case lead:
			return n.Name, nil
		}
	}
	return "", fmt.Errorf("no etcd leader now (%s)", strings.Join(errs, "; "))
}

// etcdVersion turns "etcd Version: 3.4.23\n..." into "3.4.23".
func etcdVersion(path string) string {
	first, _, _ := strings.Cut(output(path, "--version"), "\n")
	v, _ := strings.CutPrefix(strings.TrimSpace(first), "etcd Version: ")
	return v
}
