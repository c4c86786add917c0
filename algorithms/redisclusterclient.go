package algorithms

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Topology name of Redis Cluster (cluster.RedisCluster).
const topoRedisCluster = "redis-cluster"

// newRedisClusterClient is newRedisClient for a Redis Cluster: cfg.Addrs are seeds; the cluster
// names its nodes by the addresses they announce, which cfg.Dial maps to this client's proxies,
// so every byte still crosses a faultable hop.
//
// MaxRedirects -1, which go-redis reads as 0 (its 0 means its default, 3: the first form of this
// client said 0 and was retrying): its cluster client would otherwise resend a command after a
// timeout or an EOF (its "retry the same node, then another"), and a resent SET NX is a second
// write whose outcome the first one's error hides. A MOVED or ASK reply is then returned as the
// command's error — a definite one, the server answered without writing — and the algorithm's
// next attempt goes where the reloaded slot map says. The slot map is reloaded after every error that is not a
// plain reply (a dead master refuses the probe; a failover moves the slot without any MOVED
// reaching this client), so after a failover the next attempt reaches the promoted replica.
func newRedisClusterClient(cfg Config, timeout time.Duration) *redis.ClusterClient {
	o := redisOptions(cfg, timeout)
	o.Addrs, o.MaxRedirects = cfg.Addrs, -1
	c := redis.NewClusterClient(o.Cluster())
	c.AddHook(reloadOnError{c})
	return c
}

// reloadOnError asks the cluster client to reload its slot map (in the background) after a
// command failed other than by a plain error reply.
type reloadOnError struct{ c *redis.ClusterClient }

func (h reloadOnError) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.after(ctx, err)
		return err
	}
}

func (h reloadOnError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.after(ctx, err)
		return err
	}
}

func (h reloadOnError) after(ctx context.Context, err error) {
	if err == nil || errors.Is(err, redis.Nil) {
		return
	}
	var rerr redis.Error
	var nerr net.Error
	if errors.As(err, &rerr) && !errors.As(err, &nerr) {
		msg := rerr.Error()
		if len(msg) < 7 || (msg[:5] != "MOVED" && msg[:7] != "CLUSTER") {
			return // NOSCRIPT, WRONGTYPE...: the node is right
		}
	}
	h.c.ReloadState(ctx)
}
