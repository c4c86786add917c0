package checker

import (
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// Options tune a check. The zero value is ready to use: every zero field takes the default named
// in its comment.
type Options struct {
	// Timeout bounds each porcupine check (lock and resource separately; on a long history,
	// each batch of it). A check that runs out of time is "Unknown" and makes the verdict
	// unknown, never safe. Default 10s.
	Timeout time.Duration
	// Drift is the fraction by which a server's clock may run fast: a lease of TTL is assumed to
	// last at least TTL·(1−Drift) from the moment the acquire was called. Default 0.01.
	Drift float64
	// StuckAfter is how long, after the last fault healed (plus one TTL of grace), clients may
	// wait without any grant before the run is stuck. Default: the history's stuck_after_ns, else
	// 5×TTL, else 5s when the lock has no TTL.
	StuckAfter time.Duration
	// SkipVisualization leaves porcupine's linearization info empty (Outcome.Lock.Info and
	// Outcome.Resource.Info). Checking is faster and uses less memory, and an illegal history is
	// reported as soon as one partition fails; reports lose the linearizability page.
	SkipVisualization bool
}

const (
	defaultTimeout    = 10 * time.Second
	defaultDrift      = 0.01
	defaultStuckAfter = 5 * time.Second
)

// withDefaults fills the zero fields of o from the defaults and the history's meta line.
func (o Options) withDefaults(m history.Meta) Options {
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.Drift <= 0 || o.Drift >= 1 {
		o.Drift = defaultDrift
	}
	if o.StuckAfter <= 0 {
		switch {
		case m.StuckAfterNs > 0:
			o.StuckAfter = time.Duration(m.StuckAfterNs)
		case m.TTLNs > 0:
			o.StuckAfter = 5 * time.Duration(m.TTLNs)
		default:
			o.StuckAfter = defaultStuckAfter
		}
	}
	return o
}
