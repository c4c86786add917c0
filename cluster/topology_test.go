package cluster

import (
	"slices"
	"testing"
)

// TestTopologiesRegistered: every listed topology registered itself with what every topology
// must have (and a container for each kind it runs on docker), and the listing keeps its order (the four of docs/design.md#topologies-and-backends first, as lockchaos list
// has always shown them).
func TestTopologiesRegistered(t *testing.T) {
	if len(Topologies) != len(topologyRegistry) {
		t.Errorf("Topologies %v, registry of %d", Topologies, len(topologyRegistry))
	}
	for _, name := range Topologies {
		tp, ok := topologyRegistry[name]
		switch {
		case !ok:
			t.Errorf("%s is listed but not registered", name)
		case tp.nodes == nil || tp.needs == nil || tp.start == nil:
			t.Errorf("%s has no nodes, needs or start", name)
		case tp.master == nil && tp.leader == nil:
			t.Errorf("%s has neither master nor leader", name)
		}
		// A topology the docker backend runs has a container, with its image, for each kind.
		if OnDocker(name) != (tp.containers != nil) {
			t.Errorf("OnDocker(%s) = %v with containers %v", name, OnDocker(name), tp.containers)
		}
		images := Spec{RedisImage: "r", ZooKeeperImage: "z", PostgresImage: "p", MariaDBImage: "m", EtcdImage: "e"}
		for _, kind := range tp.containers {
			if c, ok := ContainerOf(kind); !ok || c.Image == nil || c.Image(images) == "" || c.start == nil || c.Port == 0 {
				t.Errorf("%s runs %s servers on docker, but no container with an image, a port and a start is registered for them", name, kind)
			}
		}
	}
	want := []string{RedisSingle, RedisMulti, RedisSentinel, ZooKeeper, Etcd}
	if !slices.Equal(Topologies[:len(want)], want) {
		t.Errorf("Topologies = %v, want it to start with %v", Topologies, want)
	}
}

// TestKindsRegistered: the kinds a cluster file may list make registered topologies, alone or with
// the kind they come with; every kind says what its wire points parse; the topologies' containers
// and SQL servers are registered kinds.
func TestKindsRegistered(t *testing.T) {
	for name, tp := range topologyRegistry {
		for _, k := range append(slices.Clone(tp.containers), tp.sql) {
			if _, ok := kinds[k]; k != "" && !ok {
				t.Errorf("%s runs %s servers, an unregistered kind", name, k)
			}
		}
		if tp.sql != "" && kinds[tp.sql].localLogin == nil {
			t.Errorf("%s's clients log in to %s, whose kind gives no login", name, tp.sql)
		}
	}
	external := kindsWhere(func(k kind) bool { return k.ping != nil })
	if !slices.Contains(external, KindRedis) || !slices.Contains(external, KindPostgres) || slices.Contains(external, KindPgBouncer) {
		t.Errorf("a cluster file may list %v: want redis and postgres, not pgbouncer", external)
	}
	for _, k := range external {
		nodes := []ExternalNode{{Name: "a", Kind: k}}
		if with := kinds[k].beside; with != "" {
			if _, err := (&ExternalFile{Nodes: nodes}).Topology(); err == nil {
				t.Errorf("a cluster file of %s nodes alone, without the %s nodes they come with, makes a topology", k, with)
			}
			nodes = append(nodes, ExternalNode{Name: "b", Kind: with})
		}
		topology, err := (&ExternalFile{Nodes: nodes}).Topology()
		if _, ok := topologyRegistry[topology]; err != nil || !ok {
			t.Errorf("a cluster file of %v: topology %q, %v; want a registered one", nodes, topology, err)
		}
	}
	wire := WireSupport()
	for k := range kinds {
		if wire[string(k)] == "" {
			t.Errorf("lockchaos list says nothing of %s's wire points", k)
		}
	}
	for k, proto := range map[Kind]string{KindRedis: protoRESP, KindSentinel: protoRESP, KindZooKeeper: protoZooKeeper, KindEtcd: "", KindPostgres: ""} {
		if got := wireProto(k); got != proto {
			t.Errorf("wireProto(%s) = %q, want %q", k, got, proto)
		}
	}
}

// TestTopologyDescriptors: every topology describes itself (family, the kind its clients reach,
// whether that kind is parsed on the wire), and the traits follow what it registered: sessions
// where it can end them, replication where it can fail over, and a wire protocol exactly where
// its clients' kind has one.
func TestTopologyDescriptors(t *testing.T) {
	all := AllTopologies()
	if len(all) != len(Topologies) {
		t.Fatalf("AllTopologies has %d, Topologies %d", len(all), len(Topologies))
	}
	for _, d := range all {
		tp := topologyRegistry[d.Name]
		if d.Family == "" || d.Kind == "" {
			t.Errorf("%s: family %q, kind %q", d.Name, d.Family, d.Kind)
		}
		if d.Has(TraitSessions) != (tp.killSessions != nil) || d.Has(TraitReplication) != (tp.replication != nil) {
			t.Errorf("%s: traits %v disagree with its registration", d.Name, d.Traits)
		}
		if (d.Wire == "") != (d.WireLacks() != "") {
			t.Errorf("%s: wire %q but WireLacks %q", d.Name, d.Wire, d.WireLacks())
		}
		got, err := LookupTopology(d.Name)
		if err != nil || got.Name != d.Name {
			t.Errorf("LookupTopology(%s) = %v, %v", d.Name, got.Name, err)
		}
	}
	if _, err := LookupTopology("redis-nowhere"); err == nil {
		t.Error("LookupTopology of an unknown topology: want an error")
	}
	pg, _ := LookupTopology(PostgresStandby)
	if pg.Family != "sql" || !pg.Has(TraitSessions) || pg.Lacks(TraitPooler) == "" {
		t.Errorf("postgres-standby: %+v, want the sql family, sessions, no pooler", pg)
	}
}
