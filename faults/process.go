package faults

import (
	"fmt"
	"sync/atomic"
)

var toxicSeq atomic.Int64

// Process faults act on server processes (docker: containers) through the cluster.

func needNodes(kind string, t Target) error {
	if len(t.Nodes) == 0 {
		return fmt.Errorf("%s needs nodes (e.g. nodes: master)", kind)
	}
	return nil
}
