package algorithms_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

// TestZooKeeperSessionValid: the recipe's Valid stays true while the holder is cut off (it cannot
// know: the session-expiry caveat), and turns false once it reaches the ensemble again and is told
// its session expired. zookeeper-ignore-session keeps saying true.
func TestZooKeeperSessionValid(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.ZooKeeper, Nodes: 1, Clients: 3, Proxies: true})
	const session = time.Second
	for i, alg := range []string{"zookeeper", "zookeeper-ignore-session"} {
		t.Run(alg, func(t *testing.T) {
			name := "session-" + alg
			a := newLocker(t, c, alg, 1, name, opts{ttl: session})
			b := newLocker(t, c, alg, 2+i, name, opts{ttl: session})
			la := acquire(t, a, 10*time.Second)
			va := validator(t, a)
			if !va.Valid(la) {
				t.Fatal("Valid false right after Acquire")
			}
			heal := cut(t, c, 1)
			lb := acquire(t, b, 10*time.Second) // granted once a's session expired
			if !va.Valid(la) {
				t.Error("Valid false while cut off: the client cannot know its session expired yet")
			}
			heal()
			deadline := time.Now().Add(5 * time.Second)
			for va.Valid(la) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			told := !va.Valid(la)
			switch {
			case alg == "zookeeper" && !told:
				t.Error("Valid still true 5 s after the heal, though the session expired and B holds the lock")
			case alg == "zookeeper-ignore-session" && told:
				t.Error("the mutant's Valid turned false")
			}
			if err := b.Release(context.Background(), lb); err != nil {
				t.Errorf("B Release: %v", err)
			}
		})
	}
}
