package cluster

import (
	"context"
	"fmt"
)

// What the core knows of a cluster file beyond its parsing: the controls a node has (for the
// faults' checks before a run), the readiness check of its servers, and the prefix of every name
// a run makes on them. The backend that runs on it is the package cluster/external.

// ProxyPrefix starts the name of every proxy lockchaos creates on a toxiproxy-server, and of
// everything a run on someone else's servers writes there: ProxyPrefix + run id + "-" + name.
const ProxyPrefix = "lockchaos-"

// Control is one way of acting on a node that the external backend has only when the cluster
// file gives it.
type Control string

// Controls of a node.
const (
	ControlLinks       Control = "toxiproxy"   // proxies on the clients' links (network faults)
	ControlKill        Control = "kill"        // the kill command
	ControlRestart     Control = "restart"     // the restart command
	ControlPause       Control = "pause"       // the pause and resume commands
	ControlReplication Control = "replication" // the replication link (failover): never external
)

// Missing returns nil when the file gives node the control, else one line naming the node and
// what to add to the file.
func (f *ExternalFile) Missing(node string, ctl Control) error {
	n, ok := f.Node(node)
	if !ok {
		return fmt.Errorf("cluster file %s has no node %s", f.Path, node)
	}
	var have bool
	var add string
	switch ctl {
	case ControlLinks:
		have, add = n.Toxiproxy != "", "toxiproxy: HOST:8474, the API of a toxiproxy-server next to it"
	case ControlKill:
		have, add = n.Kill != "", "kill: with a shell command that kills the server"
	case ControlRestart:
		have, add = n.Restart != "", "restart: with a shell command that restarts the server empty"
	case ControlPause:
		have, add = n.Pause != "" && n.Resume != "", "pause: and resume: with shell commands that stop and continue the server"
	case ControlReplication:
		return fmt.Errorf("node %s: lockchaos cannot cut an external cluster's replication (run failover on --backend local or docker)", node)
	default:
		return fmt.Errorf("node %s: unknown control %s", node, ctl)
	}
	if have {
		return nil
	}
	return fmt.Errorf("node %s has no %s in cluster file %s (add %s)", node, ctl, f.Path, add)
}

// Ping is the readiness check of a cluster file's server: its protocol's ping, and for a SQL
// server a session of the file's login. Start waits for it on every node; doctor probes with it.
func (n ExternalNode) Ping(ctx context.Context) error {
	k, ok := kinds[n.Kind]
	if !ok || k.ping == nil {
		return fmt.Errorf("node %s: a cluster file cannot list a %s node", n.Name, n.Kind)
	}
	return k.ping(ctx, n.Address, n.Login())
}
