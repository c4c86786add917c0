package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/algorithms/process"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/runner"
)

// common holds the flags every running command shares.
type common struct {
	duration, ttl time.Duration
	clients       int
	seed          int64
	seedSet       bool
	backend       string
	proxy         string
	out           string
	quiet, json   bool
	scenarioFile  string
	external      string
	redisImage    string
	zkImage       string
}

func newFlags(name string, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line by run
	fs.DurationVar(&c.duration, "duration", 0, "fault phase length (default: the scenario's)")
	fs.DurationVar(&c.ttl, "ttl", 0, "lock TTL (default: the scenario's)")
	fs.IntVar(&c.clients, "clients", 0, "number of clients (default: the scenario's)")
	fs.Func("seed", "random seed (default: from the time; printed)", func(s string) error {
		_, err := fmt.Sscan(s, &c.seed)
		c.seedSet = err == nil
		return err
	})
	fs.StringVar(&c.backend, "backend", cluster.Local, "local, docker or external")
	fs.StringVar(&c.proxy, "proxy", harness.ProxyAuto, "auto, always or never: toxiproxy on client links")
	fs.StringVar(&c.out, "out", "reports", "output directory")
	fs.BoolVar(&c.quiet, "quiet", false, "print only the verdict lines")
	fs.BoolVar(&c.json, "json", false, "print results as JSON")
	fs.StringVar(&c.scenarioFile, "scenario-file", "", "YAML file of extra scenarios")
	fs.StringVar(&c.external, "addrs", "", "comma-separated server addresses for --backend external")
	fs.StringVar(&c.redisImage, "redis-image", "", "docker backend: Redis image (default "+cluster.DefaultRedisImage+"; make images builds lockchaos/redis offline)")
	fs.StringVar(&c.zkImage, "zookeeper-image", "", "docker backend: ZooKeeper image (default "+cluster.DefaultZooKeeperImage+"; make images builds lockchaos/zookeeper)")
	return fs
}

// parse parses args and turns flag errors into usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return usagef("%s: see lockchaos help", fs.Name())
		}
		return usagef("%s: %v (see lockchaos help)", fs.Name(), err)
	}
	if fs.NArg() > 0 && fs.Name() != "check" && fs.Name() != "serve" {
		return usagef("%s: unexpected argument %q (flags start with --)", fs.Name(), fs.Arg(0))
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		// Zero means "the scenario's own" only when the flag is not given at all.
		if err == nil && (f.Name == "ttl" || f.Name == "duration" || f.Name == "clients") && strings.Trim(f.Value.String(), "0s") == "" {
			err = usagef("--%s %s: give a positive value (a lease needs a TTL; leave the flag out for the scenario's own)", f.Name, f.Value)
		}
	})
	return err
}

func (c *common) validate() error {
	switch {
	case c.duration < 0:
		return usagef("--duration %s is negative: give a positive duration like 5s", c.duration)
	case c.ttl < 0:
		return usagef("--ttl %s is negative: give a positive duration like 500ms", c.ttl)
	case c.clients < 0:
		return usagef("--clients %d is negative: give at least 1", c.clients)
	}
	switch c.backend {
	case cluster.Local, cluster.Docker, cluster.External:
	default:
		return usagef("--backend %q is unknown: use local, docker or external", c.backend)
	}
	if c.backend == cluster.External && c.external == "" {
		return usagef("--backend external needs --addrs host:port,... of the servers")
	}
	if !c.seedSet {
		c.seed = time.Now().UnixNano() % 1_000_000
	}
	return nil
}

func (c *common) options() runner.Options {
	o := runner.Options{Out: c.out, Backend: c.backend, Proxies: c.proxy, Seed: c.seed,
		Duration: c.duration, Clients: c.clients, TTL: c.ttl, Version: version,
		RedisImage: c.redisImage, ZooKeeperImage: c.zkImage}
	if c.external != "" {
		o.ExternalAddrs = strings.Split(c.external, ",")
	}
	return o
}

// badInput reports whether err is the user's to fix (exit 254) rather than the harness's.
func badInput(err error) bool {
	for _, target := range []error{harness.ErrBadConfig, cluster.ErrMissingBinary, cluster.ErrBadSpec, history.ErrCorrupt,
		process.ErrBadManifest, process.ErrMissing} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
