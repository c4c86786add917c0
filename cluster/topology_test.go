package cluster

import (
	"slices"
	"testing"
)

// TestTopologiesRegistered: every listed topology registered itself with what every topology
// must have (and a container for each kind it runs on docker), and the listing keeps its order (the four of DESIGN.md §3 first, as lockchaos list
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
			if c, ok := containers[kind]; !ok || c.Image == nil || c.Image(images) == "" || c.start == nil || c.Port == 0 {
				t.Errorf("%s runs %s servers on docker, but no container with an image, a port and a start is registered for them", name, kind)
			}
		}
	}
	want := []string{RedisSingle, RedisMulti, RedisSentinel, ZooKeeper, Etcd}
	if !slices.Equal(Topologies[:len(want)], want) {
		t.Errorf("Topologies = %v, want it to start with %v", Topologies, want)
	}
}
