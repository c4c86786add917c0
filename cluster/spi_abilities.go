package cluster

import "context"

// Abilities a Backend may have beyond Backend, found by type assertion: those of a backend on
// servers someone else runs (cluster/external has all five). A backend without one gets the core's
// way: the topology's servers started by its machines, the harness's embedded proxies, process
// faults through the machines, and Close stopping every server.

// Attacher is a Backend whose servers run already: Start adds the nodes it lists (the cluster
// file's) instead of the topology's, and their start is a readiness check only (ExternalNode.Ping).
type Attacher interface {
	Attached() []ExternalNode
}

// RemoteLinker is a Backend whose client links are proxies on toxiproxy-servers next to the
// nodes; Start asks it for the run's RemoteLinks once, before any node.
type RemoteLinker interface {
	RemoteLinks() RemoteLinks
}

// RemoteLinks are one run's client links on remote toxiproxy-servers.
type RemoteLinks interface {
	// Add makes client's link to node (the server at addr) and returns the address the client
	// dials; addr itself when the node's links cannot be faulted.
	Add(ctx context.Context, client int, node, addr string) (string, error)
	// Link returns client's link to node, for a network fault.
	Link(client int, node string) (Link, error)
	// RemoveAll deletes every link of the run, also those whose creation was not confirmed (Close).
	RemoveAll() error
}

// Controller is a Backend that runs every process fault ("kill", "restart", "pause", "resume")
// on a node its own way (the cluster file's commands), instead of through the node's Machine.
// The node's lock is held around the call; after a "restart" the core waits until the node
// answers again.
type Controller interface {
	Control(ctx context.Context, node, ctl string) error
}

// Restorer is a Backend that brings back, at Close, what the run's process faults left killed
// or paused (the servers are someone else's); Close calls it first.
type Restorer interface {
	Restore(ctx context.Context) error
}

// DataRemover is a Backend that removes the run's own data (the keys, znodes and rows whose names
// start with ProxyPrefix + run id + "-") from servers that outlive the run. Close calls it after a
// start that succeeded, once the links are gone, and again after a short gap for stragglers.
type DataRemover interface {
	RemoveRunData(ctx context.Context) error
}
