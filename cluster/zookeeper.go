package cluster

import (
	"context"
	"errors"
)

func (c *local) startZooKeeper(ctx context.Context) error {
	return errors.New("zookeeper: not implemented yet")
}

func (c *local) zkLeader(ctx context.Context) (string, error) {
	return "", errors.New("zookeeper: not implemented yet")
}
