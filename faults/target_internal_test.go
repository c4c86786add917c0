package faults

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/lockchaos/lockchaos/cluster"
)

// fiveMasters lists five Redis masters and a sentinel (which no node selector picks).
type fiveMasters struct{ cluster.Cluster }

func (fiveMasters) Nodes() []cluster.Node {
	out := []cluster.Node{{Name: "sentinel-1", Kind: cluster.KindSentinel}}
	for i := 1; i <= 5; i++ {
		out = append(out, cluster.Node{Name: fmt.Sprintf("redis-%d", i), Kind: cluster.KindRedis})
	}
	return out
}

// TestRandomMajorityPicksWhatMinorityLeaves: "minority" is the first two of five data nodes, and
// "random-majority" picks, by the draw, each of the three others and never a minority node — the
// node a client cut off from the minority still reaches.
func TestRandomMajorityPicksWhatMinorityLeaves(t *testing.T) {
	ctx := context.Background()
	minority, err := selectNodes(ctx, fiveMasters{}, "minority", 0)
	if err != nil || !slices.Equal(minority, []string{"redis-1", "redis-2"}) {
		t.Fatalf("minority of five: %v, %v; want redis-1, redis-2", minority, err)
	}
	seen := map[string]bool{}
	for pick := range uint64(30) {
		got, err := selectNodes(ctx, fiveMasters{}, "random-majority", pick)
		if err != nil || len(got) != 1 {
			t.Fatalf("random-majority (draw %d): %v, %v; want one node", pick, got, err)
		}
		if slices.Contains(minority, got[0]) {
			t.Fatalf("random-majority (draw %d) picked %s, a minority node", pick, got[0])
		}
		seen[got[0]] = true
	}
	if len(seen) != 3 {
		t.Errorf("random-majority over 30 draws picked %v: want each of redis-3, redis-4, redis-5", seen)
	}
}
