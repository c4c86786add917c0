package locktest_test

import (
	"errors"
	"testing"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/locktest"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// TestUserElectorOnKubernetes: a user's factory on the kubernetes topology gets what its own
// elector needs — the apiserver (Config.Addrs[0], its proxy), a token and the CA (Config.Kube) —
// builds a client-go client from them, and runs the baseline against the real apiserver. (The
// elector it returns is client-go's, as k8s-leaderelection builds it.)
func TestUserElectorOnKubernetes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against a real kube-apiserver")
	}
	elector, err := algorithms.Lookup("k8s-leaderelection")
	if err != nil {
		t.Fatal(err)
	}
	factory := func(cfg algorithms.Config) (algorithms.Locker, error) {
		if cfg.Kube == nil || cfg.Kube.Token == "" || cfg.Kube.CA == "" || len(cfg.Addrs) == 0 {
			return nil, errors.New("no apiserver access in Config")
		}
		rc, err := algorithms.KubeRESTConfig(cfg, 0)
		if err != nil {
			return nil, err
		}
		if _, err := coordinationv1.NewForConfig(rc); err != nil {
			return nil, err
		}
		return elector.New(cfg)
	}
	locktest.Run(t, factory, locktest.WithTopology("kubernetes"), locktest.WithScenarios("baseline"), locktest.WithOut(t.TempDir()))
}
