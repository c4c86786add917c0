package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Kubernetes is a kube-apiserver backed by one etcd member (Debian's etcd-server), the server of
// every Kubernetes controller's leader election (client-go's tools/leaderelection, a Lease object
// of coordination.k8s.io/v1). Clients reach the apiserver (Endpoints.Addrs[0], over TLS, with
// Endpoints.Kube's token and CA); etcd's address is second, for the harness and for faults. It
// runs on the local backend only: no image of kube-apiserver is built yet (use --backend local).
//
// kube-apiserver is not packaged by Debian: `make kube-apiserver` (k8s/apiserver/build.sh) builds
// it once per machine from the module proxy, at the version k8s/apiserver/VERSION pins, into
// ~/.cache/lockchaos (12.5 minutes cold on a busy 2-core machine, 2.9 GB peak RSS; a stat when cached).
const Kubernetes = "kubernetes"

// KindKubeAPIServer is a kube-apiserver.
const KindKubeAPIServer Kind = "kube-apiserver"

// KubeAPIServerEnv, when set, is the kube-apiserver binary the local backend runs; else
// kube-apiserver in PATH, else the one `make kube-apiserver` cached.
const KubeAPIServerEnv = "LOCKCHAOS_KUBE_APISERVER"

// KubeToken is the bearer token of every client (and of the harness): the apiserver's token file
// maps it to a member of system:masters, and --authorization-mode=AlwaysAllow lets it do anything.
const KubeToken = "lockchaos-token"

// KubeAccess is what a client needs beyond the apiserver's address (Endpoints.Addrs[0], its proxy)
// to build its own client-go rest.Config: Host "https://"+Addrs[0], BearerToken Token,
// TLSClientConfig.CAData CA. The serving certificate names 127.0.0.1 and localhost, where every
// proxy listens.
type KubeAccess struct {
	// Token is the bearer token (KubeToken).
	Token string
	// CA is the PEM of the certificate that signed the apiserver's serving certificate (it is
	// self-signed: the certificate itself).
	CA string
}

// kubeAPIServerFlags are the apiserver's flags beyond its addresses and files: a single
// loopback apiserver with no kubelets, nodes or controllers. AlwaysAllow skips RBAC's bootstrap
// wait; endpoint-reconciler none keeps it from writing the kubernetes Service's endpoints (no
// master lease in etcd to fight over on restart). Only the Lease API matters to the locks here.
var kubeAPIServerFlags = []string{
	"--authorization-mode=AlwaysAllow",
	"--endpoint-reconciler-type=none",
	"--service-cluster-ip-range=10.96.0.0/24",
	"--service-account-issuer=https://kubernetes.default.svc",
	"--profiling=false",
	"--v=0",
}

// kubeReady bounds the wait for /readyz: 2.2 s on an idle machine (measured), far more beside
// other runs on 2 cores.
const kubeReady = 60 * time.Second

func init() {
	registerKind(KindKubeAPIServer, kind{
		ready:       kubeReady,
		wireSupport: "not parsed: HTTP/2 over TLS (the apiserver's serving certificate is lockchaos's own, but nothing decodes it yet)",
	})
	registerTopology(Kubernetes, topology{
		family: "kubernetes", clients: KindKubeAPIServer,
		nodes: oneServer(Kubernetes),
		needs: func() []Requirement {
			return []Requirement{
				withVersion(checkCommand(etcdBin, "etcd-server"), etcdVersion),
				withVersion(kubeAPIServerRequirement(), kubeAPIServerVersion),
			}
		},
		start: (*topo).startKubernetes,
		// The node that holds the Lease objects: the faults' "master" selector reaches etcd, as
		// postgres-pgbouncer's reaches the server behind the pooler.
		master:    serverOf(KindEtcd),
		endpoints: kubeEndpoints,
	})
}

// kubeAPIServerPath finds the binary: KubeAPIServerEnv, PATH, then the build's cache.
func kubeAPIServerPath() string {
	if p := os.Getenv(KubeAPIServerEnv); p != "" {
		return p
	}
	if p, err := exec.LookPath("kube-apiserver"); err == nil {
		return p
	}
	return kubeAPIServerCached()
}

// kubeAPIServerCached is where k8s/apiserver/build.sh links the binary it built.
func kubeAPIServerCached() string {
	cache := os.Getenv("LOCKCHAOS_CACHE")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = filepath.Join(os.TempDir(), "cache")
		}
		cache = filepath.Join(dir, "lockchaos")
	}
	return filepath.Join(cache, "kube-apiserver")
}

func kubeAPIServerRequirement() Requirement {
	path := kubeAPIServerPath()
	r := Requirement{Name: "kube-apiserver",
		Fix: "build it once: make kube-apiserver (about 12 minutes on 2 cores, 2.9 GB of RAM), or set " + KubeAPIServerEnv}
	if _, err := os.Stat(path); err != nil {
		r.Detail = path + " not found"
		return r
	}
	r.OK, r.Detail = true, path
	return r
}

// kubeAPIServerVersion turns "Kubernetes v1.37.2" into "v1.37.2".
func kubeAPIServerVersion(path string) string {
	v, _ := strings.CutPrefix(strings.TrimSpace(output(path, "--version")), "Kubernetes ")
	return v
}

// startKubernetes starts etcd, then the apiserver on it. The apiserver is the first data node,
// so Endpoints.Addrs[0] is each client's way in; etcd (its data dir kept across restarts, as
// the etcd topology's) is the second.
func (c *topo) startKubernetes(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	pki, err := newKubePKI()
	if err != nil {
		return fmt.Errorf("kubernetes: %w", err)
	}
	token := "lockchaos-" + c.be.runID()
	etcdClient, etcdPeer := "http://"+localAddr(ports[1]), "http://"+localAddr(ports[2])
	ed := c.newNode("etcd-1", KindEtcd, []int{ports[1], ports[2]}, server{token: token, argv: func(dir string) []string {
		return append([]string{etcdBin,
			"--name=etcd-1",
			"--data-dir=" + filepath.Join(dir, "data"),
			"--listen-client-urls=" + etcdClient, "--advertise-client-urls=" + etcdClient,
			"--listen-peer-urls=" + etcdPeer, "--initial-advertise-peer-urls=" + etcdPeer,
			"--initial-cluster=etcd-1=" + etcdPeer,
			"--initial-cluster-state=new", "--initial-cluster-token=" + token,
		}, etcdFlags...)
	}})
	ed.ready = func(ctx context.Context) error { return etcdHealthy(ctx, ed.Addr) }
	var writeErr error
	api := c.newNode("kube-apiserver-1", KindKubeAPIServer, []int{ports[0]}, server{kube: pki, argv: func(dir string) []string {
		files, err := pki.write(dir)
		if err != nil {
			writeErr = err
			return []string{"/bin/sh", "-c", `echo "$0" >&2; exit 1`, "write the apiserver's keys: " + err.Error()}
		}
		return append([]string{kubeAPIServerPath(),
			"--etcd-servers=" + etcdClient,
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", ports[0]),
			"--cert-dir=" + dir,
			"--tls-cert-file=" + files.cert, "--tls-private-key-file=" + files.key,
			"--service-account-key-file=" + files.saPub, "--service-account-signing-key-file=" + files.saKey,
			"--token-auth-file=" + files.tokens,
		}, kubeAPIServerFlags...)
	}})
	api.ready = func(ctx context.Context) error {
		if writeErr != nil {
			return writeErr
		}
		return kubeReadyz(ctx, api.Addr, pki)
	}
	c.add(api)
	c.add(ed)
	if err := c.launchAll(ctx, []*node{ed}); err != nil {
		return err
	}
	return c.launchAll(ctx, []*node{api})
}

// kubeEndpoints gives every client the token and the CA (Endpoints.Kube).
func kubeEndpoints(c *topo, e *Endpoints) {
	for _, n := range c.data {
		if n.srv.kube != nil {
			e.Kube = &KubeAccess{Token: KubeToken, CA: string(n.srv.kube.caPEM)}
		}
	}
}

// kubeReadyz is nil once the apiserver answers /readyz with 200: its post-start hooks ran and
// it reaches etcd.
func kubeReadyz(ctx context.Context, addr string, pki *kubePKI) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pki.caPEM)
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer cl.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/readyz", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+KubeToken)
	resp, err := cl.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s: %s", resp.Status, lastLines(string(body), 3))
	}
	return nil
}
