// Package histgen generates histories of a correct lock as the harness would record them, fast
// enough for ten million operations, optionally with one injected violation: the input of the
// checker's property tests and of the benchmarks of the checker and of `lockchaos check`.
package histgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// Inject names a deliberate bug a generated history carries.
type Inject int

const (
	None    Inject = iota
	Client         // a holder pauses past its lease and writes after the next (legal) grant
	Service        // the next holder is granted while the lease is valid and unreleased
)

// Config describes a generated history: a correct lock serving clients in turn, as the harness
// would record it, optionally with one injected violation at critical section InjectAt.
type Config struct {
	Clients  int
	Ops      int // about this many operations (4 per critical section)
	TTL      time.Duration
	Seed     uint64
	Inject   Inject
	InjectAt int  // critical section index
	Noise    bool // add failed and unknown acquires
}

// Generate builds the history directly as events: values live in one backing slice, so the only
// allocations are the slices themselves.
func Generate(cfg Config) *history.History {
	n := max(cfg.Ops/4, 1)
	h := &history.History{Meta: metaOf(cfg), Events: make([]history.Event, 0, 8*n+16)}
	vals := make([]int64, 0, 2*n)
	generate(cfg, func(e *history.Event) {
		if e.Value != nil {
			vals = append(vals, *e.Value)
			e.Value = &vals[len(vals)-1]
		}
		h.Events = append(h.Events, *e)
	})
	return h
}

func metaOf(cfg Config) history.Meta {
	return history.Meta{Type: history.TypeMeta, Algorithm: "gen", Scenario: "generated", Backend: "none",
		Seed: int64(cfg.Seed), Clients: cfg.Clients, TTLNs: int64(cfg.TTL)}
}

// generate hands each event to out in time order, as the harness records them; out must not keep
// e or its Value.
func generate(cfg Config, out func(e *history.Event)) {
	// Critical sections are generated one after the other, but a client waiting for the lock
	// invoked its acquire long before its turn: events wait in a heap until no event still to
	// be generated can come before them (none comes before the earliest next acquire).
	var pending timeHeap
	sorted := func(e *history.Event) {
		q := queued{e: *e, seq: pending.seq}
		pending.seq++
		if e.Value != nil {
			q.v = *e.Value
			q.e.Value = nil
			q.hasV = true
		}
		pending.push(q)
	}
	release := func(before int64) {
		for len(pending.q) > 0 && pending.q[0].e.AtNs < before {
			q := pending.pop()
			if q.hasV {
				q.e.Value = &q.v
			}
			out(&q.e)
		}
	}
	defer release(math.MaxInt64)
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	n := max(cfg.Ops/4, 1)
	var scratch int64
	val := func(v int64) *int64 { scratch = v; return &scratch } // used by the next emit only
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
		sorted(&inv)
		if done != "" {
			c := history.Event{Type: done, ID: id, AtNs: ret, Error: errText}
			if op == history.OpRead && done == history.TypeOk {
				c.Value = v
			}
			sorted(&c)
		}
		return id
	}
	us := int64(time.Microsecond)
	ttl := int64(cfg.TTL)
	next := make([]int64, cfg.Clients) // when each client next calls acquire
	for c := range next {
		next[c] = rng.Int64N(50 * us)
	}
	var free, counter int64 // when the lock is next free; the resource's value
	for k := 0; k < n; k++ {
		release(slices.Min(next))
		c := rng.IntN(cfg.Clients)
		client := c + 1
		call := next[c]
		if cfg.Noise && rng.IntN(50) == 0 { // an attempt that timed out, then a retry
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
		if k == cfg.InjectAt && cfg.Inject != None {
			// The holder stops before its write; the next holder is granted (after the lease
			// ends for a client-class bug, at once for a service-class one), reads, writes and
			// releases; then the paused holder writes its stale value.
			c2 := (c + 1) % cfg.Clients
			g2 := grant + ttl + 100*us
			if cfg.Inject == Service {
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
}

// Encode returns h as its history file would hold it.
func Encode(h *history.History) ([]byte, error) {
	buf, err := json.Marshal(h.Meta)
	if err != nil {
		return nil, fmt.Errorf("histgen: %w", err)
	}
	buf = append(buf, '\n')
	for _, e := range h.Events {
		buf = history.AppendJSON(buf, e)
	}
	return buf, nil
}

// WriteFile generates the history of cfg straight into a history file at path, without holding
// it in memory (ten million operations are a 1.4 GB file).
func WriteFile(path string, cfg Config) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("histgen: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("histgen: %w", cerr)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	buf, err := json.Marshal(metaOf(cfg))
	if err != nil {
		return fmt.Errorf("histgen: %w", err)
	}
	buf = append(buf, '\n')
	var werr error
	generate(cfg, func(e *history.Event) {
		buf = history.AppendJSON(buf, *e)
		if len(buf) > 1<<16 && werr == nil {
			_, werr = w.Write(buf)
			buf = buf[:0]
		}
	})
	if werr == nil {
		_, werr = w.Write(buf)
	}
	if werr == nil {
		werr = w.Flush()
	}
	if werr != nil {
		return fmt.Errorf("histgen: %w", werr)
	}
	return nil
}

// queued is an event waiting for its turn, with its value (the generator reuses its pointer).
type queued struct {
	e    history.Event
	v    int64
	hasV bool
	seq  int64 // generation order, which orders events at one instant
}

// timeHeap orders queued events by time. It holds only the events of the clients waiting for the
// lock, a few dozen: a typed heap, without container/heap's boxing of each one.
type timeHeap struct {
	q   []queued
	seq int64
}

func (h *timeHeap) less(i, j int) bool {
	a, b := &h.q[i], &h.q[j]
	return a.e.AtNs < b.e.AtNs || a.e.AtNs == b.e.AtNs && a.seq < b.seq
}

func (h *timeHeap) push(x queued) {
	h.q = append(h.q, x)
	for i := len(h.q) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.q[i], h.q[p] = h.q[p], h.q[i]
		i = p
	}
}

func (h *timeHeap) pop() queued {
	x := h.q[0]
	n := len(h.q) - 1
	h.q[0] = h.q[n]
	h.q = h.q[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h.less(c+1, c) {
			c++
		}
		if !h.less(c, i) {
			break
		}
		h.q[i], h.q[c] = h.q[c], h.q[i]
		i = c
	}
	return x
}
