package cluster

import (
	"context"
	"errors"
)

const sentinelMasterName = "lockchaos"

func (c *local) startSentinelTopology(ctx context.Context) error {
	return errors.New("redis-sentinel: not implemented yet")
}

func (c *local) sentinelMaster(ctx context.Context) (string, error) {
	return "", errors.New("redis-sentinel: not implemented yet")
}
