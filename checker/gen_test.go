package checker

import (
	"math/rand/v2"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// inject names a deliberate bug a generated history carries.
type inject int

const (
	injectNone    inject = iota
	injectClient         // a holder pauses past its lease and writes after the next (legal) grant
	injectService        // the next holder is granted while the lease is valid and unreleased
)

// genConfig describes a generated history: a correct lock serving clients in turn, as the harness
// would record it, optionally with one injected violation at critical section injectAt.
type genConfig struct {
	clients  int
	ops      int // about this many operations (4 per critical section)
	ttl      time.Duration
	seed     uint64
	inject   inject
	injectAt int  // critical section index
	noise    bool // add failed and unknown acquires
}

// generate builds the history directly as events, fast enough for a million operations: values
// live in one backing slice, so the only allocations are the slices themselves.
func generate(cfg genConfig) *history.History {
	rng := rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))
	n := max(cfg.ops/4, 1)
	h := &history.History{Meta: history.Meta{Type: history.TypeMeta, Algorithm: "gen", Scenario: "generated", Backend: "none",
		Seed: int64(cfg.seed), Clients: cfg.clients, TTLNs: int64(cfg.ttl)}}
	h.Events = make([]history.Event, 0, 8*n+16)
	vals := make([]int64, 0, 2*n)
	val := func(v int64) *int64 { vals = append(vals, v); return &vals[len(vals)-1] }
	var id int64
	emit := func(op history.Op, client int, acq, call int64, done history.Type, ret int64, v *int64, errText string) int64 {
		id++
		inv := history.Event{Type: history.TypeInvoke, ID: id, Op: op, Client: client, Acq: acq, AtNs: call}
		if op == history.OpAcquire {
			inv.Lock = "lock"
		}
		if op == history.OpWrite {
			inv.Value = v
		}
		h.Events = append(h.Events, inv)
		if done != "" {
			c := history.Event{Type: done, ID: id, AtNs: ret, Error: errText}
			if op == history.OpRead && done == history.TypeOk {
				c.Value = v
			}
			h.Events = append(h.Events, c)
		}
		return id
	}
	us := int64(time.Microsecond)
	ttl := int64(cfg.ttl)
	next := make([]int64, cfg.clients) // when each client next calls acquire
	for c := range next {
		next[c] = rng.Int64N(50 * us)
	}
	var free, counter int64 // when the lock is next free; the resource's value
	for k := 0; k < n; k++ {
		c := rng.IntN(cfg.clients)
		client := c + 1
		call := next[c]
		if cfg.noise && rng.IntN(50) == 0 { // an attempt that timed out, then a retry
			st := history.TypeFail
			if rng.IntN(2) == 0 {
				st = history.TypeInfo
			}
			emit(history.OpAcquire, client, 0, call, st, call+10*us, nil, "acquire timeout")
			call += 11 * us
		}
		grant := max(free, call) + 20*us + rng.Int64N(20*us)
		a := emit(history.OpAcquire, client, 0, call, history.TypeOk, grant, nil, "")
		t := grant + 5*us
		v := counter
		emit(history.OpRead, client, a, t, history.TypeOk, t+2*us, val(v), "")
		t += 3*us + rng.Int64N(30*us)
		if k == cfg.injectAt && cfg.inject != injectNone {
			// The holder stops before its write; the next holder is granted (after the lease
			// ends for a client-class bug, at once for a service-class one), reads, writes and
			// releases; then the paused holder writes its stale value.
			c2 := (c + 1) % cfg.clients
			g2 := grant + ttl + 100*us
			if cfg.inject == injectService {
				g2 = t + 10*us
			}
			b := emit(history.OpAcquire, c2+1, 0, min(next[c2], g2-10*us), history.TypeOk, g2, nil, "")
			emit(history.OpRead, c2+1, b, g2+5*us, history.TypeOk, g2+7*us, val(v), "")
			emit(history.OpWrite, c2+1, b, g2+8*us, history.TypeOk, g2+10*us, val(v+1), "")
			late := g2 + 12*us
			emit(history.OpWrite, client, a, late, history.TypeOk, late+2*us, val(v+1), "")
			emit(history.OpRelease, c2+1, b, late+5*us, history.TypeOk, late+7*us, nil, "")
			emit(history.OpRelease, client, a, late+8*us, history.TypeFail, late+10*us, nil, "not held")
			counter = v + 1
			free = late + 10*us
			next[c], next[c2] = free+rng.Int64N(40*us), free+rng.Int64N(40*us)
			continue
		}
		emit(history.OpWrite, client, a, t, history.TypeOk, t+2*us, val(v+1), "")
		counter = v + 1
		t += 3 * us
		emit(history.OpRelease, client, a, t, history.TypeOk, t+10*us, nil, "")
		free = t + 10*us
		next[c] = free + rng.Int64N(40*us)
	}
	return h
}
