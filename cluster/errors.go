package cluster

import (
	"errors"

	"github.com/lockchaos/lockchaos/internal/lcerr"
)

// ErrMissingBinary is wrapped by Start's error when a server binary or jar is not installed; the
// CLI maps it to exit 254 because the fix is on the user's side (install it, or run make deps).
var ErrMissingBinary = lcerr.New("lockchaos: missing server binary")

// ErrBadSpec is wrapped by Start's error when the Spec itself is wrong (unknown topology, bad node
// count, ...); also exit 254.
var ErrBadSpec = lcerr.New("lockchaos: bad cluster spec")

// ErrProxiesOff is returned by Link when the cluster was started without Spec.Proxies.
var ErrProxiesOff = errors.New("lockchaos: proxies are off (start the cluster with Spec.Proxies)")

// ErrUnknownNode is wrapped when a method is given a node name the cluster does not have.
var ErrUnknownNode = errors.New("lockchaos: unknown node")
