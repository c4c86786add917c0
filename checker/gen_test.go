package checker

import (
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/histgen"
)

// inject names a deliberate bug a generated history carries (histgen.Inject).
type inject = histgen.Inject

const (
	injectNone    = histgen.None
	injectClient  = histgen.Client
	injectService = histgen.Service
)

// genConfig describes a generated history (histgen.Config).
type genConfig struct {
	clients  int
	ops      int // about this many operations (4 per critical section)
	ttl      time.Duration
	seed     uint64
	inject   inject
	injectAt int  // critical section index
	noise    bool // add failed and unknown acquires
}

func generate(cfg genConfig) *history.History {
	return histgen.Generate(histgen.Config{Clients: cfg.clients, Ops: cfg.ops, TTL: cfg.ttl, Seed: cfg.seed,
		Inject: cfg.inject, InjectAt: cfg.injectAt, Noise: cfg.noise})
}
