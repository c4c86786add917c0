package main

import (
	"context"
	"fmt"
	"io"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/external"
)

// doctorCluster checks every node and toxiproxy API of a cluster file: exit 0 when all answer,
// 1 when any does not, 254 when the file itself is wrong.
func doctorCluster(ctx context.Context, path string, stdout io.Writer) (int, error) {
	f, err := cluster.LoadExternal(path)
	if err != nil {
		return 0, err
	}
	topology, _ := f.Topology()
	fmt.Fprintf(stdout, "cluster file %s: %s, %d nodes\n", path, topology, len(f.Nodes))
	code := exitValid
	for _, p := range external.ProbeFile(ctx, f) {
		if p.Err != nil {
			code = exitInvalid
			fmt.Fprintf(stdout, "  UNREACHABLE %-28s %s: %v\n", p.What, p.Addr, p.Err)
			continue
		}
		fmt.Fprintf(stdout, "  ok          %-28s %s\n", p.What, p.Addr)
	}
	for _, pc := range external.CountProxies(ctx, f) {
		if pc.Err == nil && pc.All > 0 {
			fmt.Fprintf(stdout, "  note: toxiproxy %s holds %d lockchaos proxies (%d of killed runs on this host, which the next run removes; the others belong to live runs or other hosts)\n",
				pc.API, pc.All, pc.Stale)
		}
	}
	for _, n := range f.Nodes {
		var missing []string
		for _, ctl := range []cluster.Control{cluster.ControlLinks, cluster.ControlKill, cluster.ControlRestart, cluster.ControlPause} {
			if f.Missing(n.Name, ctl) != nil {
				missing = append(missing, string(ctl))
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(stdout, "  note: node %s has no %v: faults that need them are refused\n", n.Name, missing)
		}
	}
	return code, nil
}
