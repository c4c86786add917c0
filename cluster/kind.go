package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// kind is everything the cluster layer decides by the kind of server a node runs, registered from
// the kind's own file (redis.go, zookeeper.go, postgres.go, ...) with registerKind, as a topology is
// with registerTopology: adding a kind of server is adding a file, with no case to add in a switch
// elsewhere. (What the external backend deletes from someone else's servers after a run is its
// own: cluster/external, which holds the client libraries that cluster does without.)
type kind struct {
	// ports is how many ports a local server of the kind listens on, its client port first
	// (0: one; a ZooKeeper member also listens for its quorum and its election).
	ports int
	// ready bounds the local backend's wait for a started server to answer (0: 15 s).
	ready time.Duration
	// argv writes the config of a local server of the kind into its dir (m.dir) and returns its
	// command line; restart says the start comes from Restart. nil: each node of the kind brings
	// its own (server.argv).
	argv func(m *process, restart bool) ([]string, error)
	// container is how a container backend (cluster/docker) runs the kind; nil: it runs none.
	container *Container
	// wire is the protocol WireTap parses on the kind's client links (protoRESP,
	// protoZooKeeper); "": it parses none (docs/design.md#wire-points).
	wire string
	// wireSupport is what `lockchaos list` says of the kind's wire points: the protocol parsed,
	// or why none is.
	wireSupport string
	// ping is the readiness check of a cluster file's server of the kind, l the file's login (a
	// SQL server's). nil: a cluster file cannot list the kind.
	ping func(ctx context.Context, addr string, l SQLLogin) error
	// login checks the SQL login of a cluster file's node and fills its defaults, after the
	// password was read; nil: the kind takes none, and a node that sets one is refused.
	login func(n *ExternalNode) error
	// localLogin is client's login to a SQL server of the kind that lockchaos started (client 0:
	// the harness's own); appName says its sessions carry an application_name, by which
	// session-kill finds them (PostgreSQL's).
	localLogin func(client int) SQLLogin
	appName    bool
	// external is the topology of a cluster file that lists n nodes of the kind (with, when
	// beside is set, nodes of that kind too).
	external func(n int) (string, error)
	// beside is the kind this one's nodes come with in a cluster file, if any: sentinels come
	// with the Redis master and its replicas.
	beside Kind
}

// kinds holds every kind of server, by name.
var kinds = map[Kind]kind{}

// registerKind adds a kind of server; call it from init in the kind's file.
func registerKind(name Kind, k kind) {
	if _, dup := kinds[name]; dup {
		panic("cluster: duplicate kind " + name)
	}
	if k.wireSupport == "" {
		panic("cluster: kind " + name + " says nothing of its wire points")
	}
	if k.ping != nil && k.external == nil {
		panic("cluster: kind " + name + " may be listed in a cluster file but makes no topology there")
	}
	kinds[name] = k
}

// kindsWhere lists, by name, the kinds for which keep is true.
func kindsWhere(keep func(kind) bool) []Kind {
	var out []Kind
	for name, k := range kinds {
		if keep(k) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// listed joins kinds as prose: "a, b or c" with last "or".
func listed(ks []Kind, last string) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " " + last + " " + s[len(s)-1]
}

// localPorts is how many ports a local server of kind k listens on.
func (k Kind) localPorts() int { return max(kinds[k].ports, 1) }

// readyTimeout bounds the local backend's wait for a started server of kind k to answer.
func (k Kind) readyTimeout() time.Duration {
	if d := kinds[k].ready; d > 0 {
		return d
	}
	return 15 * time.Second
}

// wireProto is the protocol a node of kind k speaks on its client links, "" when lockchaos does
// not parse it (etcd's gRPC, SQL: docs/design.md#wire-points).
func wireProto(k Kind) string { return kinds[k].wire }

// WireSupport says, for each kind of server lockchaos runs, which protocol its wire points parse
// on the client links, or why none (docs/design.md#wire-points), as `lockchaos list` shows it.
func WireSupport() map[string]string {
	out := make(map[string]string, len(kinds))
	for name, k := range kinds {
		out[string(name)] = k.wireSupport
	}
	return out
}

// oneExternalServer is the external topology of a server that runs alone: a cluster file lists
// the one server the clients use.
func oneExternalServer(name Kind, topology string) func(n int) (string, error) {
	return func(n int) (string, error) {
		if n > 1 {
			return "", fmt.Errorf("%d %s nodes (list the one server the clients use; a standby or a pooler in front runs on the local backend only)", n, name)
		}
		return topology, nil
	}
}

// externalMembers is the external topology of an ensemble that needs a majority: a cluster file
// lists every member, an odd number of them.
func externalMembers(name Kind, topology string) func(n int) (string, error) {
	return func(n int) (string, error) {
		if n%2 == 0 {
			return "", fmt.Errorf("%d %s nodes (list every member: 1, 3 or 5)", n, name)
		}
		return topology, nil
	}
}
