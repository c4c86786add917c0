package external

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	toxiclient "github.com/lockchaos/lockchaos/third_party/toxiproxy/client"

	"github.com/lockchaos/lockchaos/cluster"
)

// probeTimeout bounds each check of a node or toxiproxy API.
const probeTimeout = 3 * time.Second

// Probe is the check of one address of a cluster file.
type Probe struct {
	// What is checked: "node redis-1 (redis)" or "toxiproxy 10.0.0.5:8474".
	What string
	Addr string
	// Err is nil when the address answered as it should.
	Err error
}

// ProbeFile checks every node of f (a TCP dial, then its protocol's ping: redis PING,
// ZooKeeper srvr, etcd /health, a SQL session of the file's login) and every toxiproxy API (its proxy list), in parallel, and
// returns the checks in file order.
func ProbeFile(ctx context.Context, f *cluster.ExternalFile) []Probe {
	var out []Probe
	for _, n := range f.Nodes {
		out = append(out, Probe{What: fmt.Sprintf("node %s (%s)", n.Name, n.Kind), Addr: n.Address})
	}
	for _, a := range apis(f) {
		out = append(out, Probe{What: "toxiproxy", Addr: a})
	}
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			if i < len(f.Nodes) {
				out[i].Err = probeNode(ctx, f.Nodes[i])
			} else {
				out[i].Err = probeAPI(ctx, out[i].Addr)
			}
		}()
	}
	wg.Wait()
	return out
}

func dial(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

func probeNode(ctx context.Context, n cluster.ExternalNode) error {
	if err := dial(ctx, n.Address); err != nil {
		return err
	}
	if err := n.Ping(ctx); err != nil {
		return &wrongAnswer{kind: n.Kind, err: err}
	}
	return nil
}

// wrongAnswer: a node took the connection but did not answer as its kind (or, a SQL server,
// refused the file's login).
type wrongAnswer struct {
	kind cluster.Kind
	err  error
}

func (e *wrongAnswer) Error() string { return fmt.Sprintf("answers, but not as %s: %v", e.kind, e.err) }
func (e *wrongAnswer) Unwrap() error { return e.err }

func probeAPI(ctx context.Context, addr string) error {
	if err := dial(ctx, addr); err != nil {
		return err
	}
	_, err := api(ctx, toxiclient.NewClient(addr).Proxies)
	return err
}

// Reachable returns nil when every node and toxiproxy API of f answers, else an ErrBadSpec error
// naming the first that does not and the fix.
func Reachable(ctx context.Context, f *cluster.ExternalFile) error {
	for _, p := range ProbeFile(ctx, f) {
		var wrong *wrongAnswer
		if errors.As(p.Err, &wrong) {
			return fmt.Errorf("%w: %s at %s %v (check its kind, and a SQL server's user, password, database and sslmode, in cluster file %s; lockchaos doctor --cluster checks them all)",
				cluster.ErrBadSpec, p.What, p.Addr, p.Err, f.Path)
		}
		if p.Err != nil {
			return fmt.Errorf("%w: %s at %s is unreachable: %v (start it, or fix its address in cluster file %s; lockchaos doctor --cluster checks them all)",
				cluster.ErrBadSpec, p.What, p.Addr, p.Err, f.Path)
		}
	}
	return nil
}
