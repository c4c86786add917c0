package harness

import (
	"fmt"
	"slices"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
)

// loadExternal reads the cluster file, takes the topology from its nodes, and refuses every fault
// whose control the file does not give, before any server is touched.
func (c *Config) loadExternal(info algorithms.Info) error {
	if c.ClusterFile == "" {
		return fmt.Errorf("--backend external needs --cluster FILE (a YAML list of the servers, see docs/external.md)")
	}
	f, err := cluster.LoadExternal(c.ClusterFile)
	if err != nil {
		return err
	}
	topology, err := f.Topology()
	if err != nil {
		return err
	}
	switch {
	case !slices.Contains(info.Topologies, topology):
		return fmt.Errorf("algorithm %s runs on %v, cluster file %s holds a %s cluster (point --cluster at a cluster of its kind)", c.Algorithm, info.Topologies, c.ClusterFile, topology)
	case c.Topology != "" && c.Topology != topology:
		return fmt.Errorf("this cell runs on %s, cluster file %s holds a %s cluster (point --cluster at a %s cluster)", c.Topology, c.ClusterFile, topology, c.Topology)
	}
	c.Topology, c.Nodes = topology, len(f.Nodes)
	var names []string
	for _, n := range f.Nodes {
		names = append(names, n.Name)
	}
	for i, s := range c.Faults {
		for _, need := range faults.Needs(s, names) {
			if err := f.Missing(need.Node, need.Control); err != nil {
				return fmt.Errorf("fault %d (%s) cannot run: %w", i+1, s.Kind, err)
			}
		}
	}
	c.external = f
	return nil
}
