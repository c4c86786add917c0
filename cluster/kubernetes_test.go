package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// kubeGet fetches path from the apiserver at addr as a client with access a would.
func kubeGet(ctx context.Context, addr string, a *KubeAccess, path string) (int, string, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(a.CA)) {
		return 0, "", fmt.Errorf("the CA is no PEM certificate")
	}
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer cl.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	resp, err := cl.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestKubernetes starts kube-apiserver on etcd, reaches it through a client's proxy with the
// token and CA the client is given, and survives a restart of etcd and of the apiserver.
func TestKubernetes(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: Kubernetes, Clients: 2, Proxies: true})
	ctx := ctxT(t, 120*time.Second)
	ns := c.Nodes()
	if len(ns) != 2 || ns[0].Kind != KindKubeAPIServer || ns[1].Kind != KindEtcd {
		t.Fatalf("Nodes = %+v; want the apiserver, then etcd", ns)
	}
	e := c.Endpoints(1)
	if e.Kube == nil || e.Kube.Token == "" || !strings.Contains(e.Kube.CA, "BEGIN CERTIFICATE") {
		t.Fatalf("Endpoints(1).Kube = %+v; want a token and a CA", e.Kube)
	}
	if e.Addrs[0] == ns[0].Addr {
		t.Fatalf("client 1 reaches the apiserver directly (%s), not through its proxy", e.Addrs[0])
	}
	code, body, err := kubeGet(ctx, e.Addrs[0], e.Kube, "/apis/coordination.k8s.io/v1/namespaces/default/leases")
	if err != nil || code != http.StatusOK {
		t.Fatalf("list leases through client 1's proxy: %d %v %.200s", code, err, body)
	}
	if code, _, err := kubeGet(ctx, e.Addrs[0], &KubeAccess{Token: "wrong", CA: e.Kube.CA}, "/apis/coordination.k8s.io/v1/namespaces/default/leases"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d %v; want 401 (the token file is what admits the clients)", code, err)
	}
	if m, err := c.Master(ctx); err != nil || m != "etcd-1" {
		t.Errorf("Master = %q, %v; want etcd-1 (the node that holds the leases)", m, err)
	}
	if _, err := c.Link(2, "kube-apiserver-1"); err != nil {
		t.Errorf("Link(2, kube-apiserver-1): %v", err)
	}
	for _, n := range []string{"etcd-1", "kube-apiserver-1"} {
		if err := c.Restart(ctx, n); err != nil {
			t.Fatalf("restart %s: %v", n, err)
		}
		var code int
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if code, _, err = kubeGet(ctx, e.Addrs[0], e.Kube, "/readyz"); err == nil && code == http.StatusOK {
				break
			}
		}
		if code != http.StatusOK {
			t.Fatalf("after restarting %s: /readyz %d %v", n, code, err)
		}
	}
	d, err := LookupTopology(Kubernetes)
	if err != nil || d.Family != "kubernetes" || d.Kind != KindKubeAPIServer || d.Wire != "" || d.Docker {
		t.Errorf("descriptor %+v, %v", d, err)
	}
}
