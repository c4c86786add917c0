package reports

import (
	"math/rand"
	"sort"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

const ms = int64(time.Millisecond)

// recorder builds histories by hand, one operation at a time.
type recorder struct {
	h  *history.History
	id int64
}

func newRecorder(meta history.Meta) *recorder {
	meta.Type = history.TypeMeta
	return &recorder{h: &history.History{Meta: meta}}
}

// op records an invocation at call and its completion at ret (ret < 0: no completion line).
func (r *recorder) op(op history.Op, client int, acq, call, ret int64, status history.Type, mod func(inv, done *history.Event)) int64 {
	r.id++
	inv := history.Event{Type: history.TypeInvoke, ID: r.id, Op: op, Client: client, Lock: "lock", Acq: acq, AtNs: call}
	done := history.Event{Type: status, ID: r.id, AtNs: ret}
	if mod != nil {
		mod(&inv, &done)
	}
	r.h.Events = append(r.h.Events, inv)
	if ret >= 0 {
		r.h.Events = append(r.h.Events, done)
	}
	return r.id
}

func (r *recorder) fault(id int64, name, target, point string, start, end int64, errText string) {
	r.h.Events = append(r.h.Events, history.Event{Type: history.TypeFault, Phase: history.PhaseStart, Fault: id, Name: name,
		Target: target, Point: point, AtNs: start})
	if end >= 0 {
		r.h.Events = append(r.h.Events, history.Event{Type: history.TypeFault, Phase: history.PhaseEnd, Fault: id, AtNs: end, Error: errText})
	}
}

// cs records a whole critical section; it returns the acquire id and the write id.
func (r *recorder) cs(client int, call, grant, read, write, writeEnd, rel, relEnd int64, value int64, ttl int64) (acq, wr int64) {
	acq = r.op(history.OpAcquire, client, 0, call, grant, history.TypeOk, func(_, d *history.Event) {
		d.ValidityNs, d.TTLNs = ttl, ttl
	})
	r.op(history.OpRead, client, acq, read, read+ms/10, history.TypeOk, func(_, d *history.Event) { d.Value = history.Int64(value - 1) })
	wr = r.op(history.OpWrite, client, acq, write, writeEnd, history.TypeOk, func(i, _ *history.Event) { i.Value = history.Int64(value) })
	r.op(history.OpRelease, client, acq, rel, relEnd, history.TypeOk, nil)
	return acq, wr
}

func (r *recorder) history() *history.History {
	sort.SliceStable(r.h.Events, func(i, j int) bool { return r.h.Events[i].AtNs < r.h.Events[j].AtNs })
	return r.h
}

func strp(s string) *string                 { return &s }
func f64p(f float64) *float64               { return &f }
func classp(c checker.Class) *checker.Class { return &c }

// pauseRun is a small client-pause run of "token": client 1 is paused at cs:before-write for
// longer than its 1 s lease, client 2 is granted the expired lock, and client 1 then writes.
func pauseRun() (*history.History, *checker.Outcome) {
	rec := newRecorder(history.Meta{Algorithm: "token", Scenario: "client-pause", Backend: "local", Seed: 42,
		Clients: 3, TTLNs: 1000 * ms, HoldNs: 20 * ms, Expected: "unsafe-client", Started: "2026-11-21T23:59:00Z",
		Version: "test", Command: "lockchaos run --algorithm token --scenario client-pause --seed 42"})
	v := int64(1)
	rec.cs(2, 0, 2*ms, 3*ms, 25*ms, 26*ms, 27*ms, 28*ms, v, 1000*ms)
	v++
	rec.cs(3, 10*ms, 29*ms, 30*ms, 52*ms, 53*ms, 54*ms, 55*ms, v, 1000*ms)
	// Client 1: granted at 57 ms, paused from 60 ms to 1300 ms, writes at 1300 ms.
	a1 := rec.op(history.OpAcquire, 1, 0, 20*ms, 57*ms, history.TypeOk, func(_, d *history.Event) {
		d.ValidityNs, d.TTLNs, d.Fence = 1000*ms, 1000*ms, 3
	})
	rec.op(history.OpRead, 1, a1, 58*ms, 59*ms, history.TypeOk, func(_, d *history.Event) { d.Value = history.Int64(2) })
	rec.fault(1, "client-pause", "client-1", "cs:before-write", 60*ms, 1300*ms, "")
	// Client 2 waits for the lease to expire on the server and is granted at 1060 ms.
	a2 := rec.op(history.OpAcquire, 2, 0, 40*ms, 1060*ms, history.TypeOk, func(_, d *history.Event) {
		d.ValidityNs, d.TTLNs, d.Fence = 1000*ms, 1000*ms, 4
	})
	rec.op(history.OpRead, 2, a2, 1061*ms, 1062*ms, history.TypeOk, func(_, d *history.Event) { d.Value = history.Int64(2) })
	rec.op(history.OpWrite, 2, a2, 1082*ms, 1083*ms, history.TypeOk, func(i, _ *history.Event) { i.Value = history.Int64(3) })
	rec.op(history.OpRelease, 2, a2, 1084*ms, 1085*ms, history.TypeOk, nil)
	w1 := rec.op(history.OpWrite, 1, a1, 1300*ms, 1301*ms, history.TypeOk, func(i, _ *history.Event) { i.Value = history.Int64(3) })
	rec.op(history.OpRelease, 1, a1, 1302*ms, 1303*ms, history.TypeFail, func(_, d *history.Event) { d.Error = "not the owner" })
	rec.fault(2, "latency", "node-1", "", 1400*ms, 1700*ms, "")
	for i := int64(0); i < 8; i++ {
		c := int(i%3) + 1
		t := 1500*ms + i*40*ms
		rec.cs(c, t, t+2*ms, t+3*ms, t+25*ms, t+26*ms, t+27*ms, t+28*ms, 4+i, 1000*ms)
	}
	h := rec.history()
	o := &checker.Outcome{Result: checker.Result{
		Algorithm: "token", Scenario: "client-pause", Backend: "local", Seed: 42, Verdict: checker.Unsafe,
		Expected: strp("unsafe-client"), ViolationClass: classp(checker.ClientClass), DurationMs: 1900,
		Operations: len(history.Operations(h.Events)), AcquiresOk: 12, ExclusionViolations: 1, LostUpdates: 1,
		TTDMs: f64p(1300), AcquireLatencyMs: checker.Latency{P50: 2, P99: 1020, Max: 1020}, ThroughputCSPerS: 6.3,
		LongestStallMs: 1000, CheckerMs: 3.2,
		FirstViolation: &checker.Violation{Kind: "exclusion", Class: checker.ClientClass, AtMs: 1300,
			A:           checker.OpRef{ID: w1, Op: "write", Client: 1, Acq: a1, CallMs: 1300, ReturnMs: 1301},
			B:           checker.OpRef{ID: a2, Op: "acquire", Client: 2, CallMs: 40, ReturnMs: 1060},
			Explanation: "client 1 wrote under a lease that expired at 1020 ms; client 2 held the lock since 1060 ms"},
		ClassesSeen: []checker.Class{checker.ClientClass},
		LockCheck:   checker.Check{Result: "Ok", Ms: 1.1}, ResourceCheck: checker.Check{Result: "Illegal", Ms: 2.1},
		Matches: boolp(true),
	}}
	o.Analysis = analysisOf(h)
	return h, o
}

// analysisOf is what the checker concludes about h, which the reports draw.
func analysisOf(h *history.History) checker.Analysis {
	return checker.CheckHistory(h, checker.Options{SkipVisualization: true}).Analysis
}

func boolp(b bool) *bool { return &b }

// safeRun is a short baseline run with no violation.
func safeRun() (*history.History, *checker.Outcome) {
	rec := newRecorder(history.Meta{Algorithm: "token", Scenario: "baseline", Backend: "local", Seed: 7, Clients: 3,
		TTLNs: 1000 * ms, Started: "2026-11-21T23:59:00Z", Version: "test", Command: "lockchaos run --algorithm token --scenario baseline --seed 7"})
	for i := int64(0); i < 30; i++ {
		c := int(i%3) + 1
		t := i * 30 * ms
		rec.cs(c, t, t+2*ms, t+3*ms, t+25*ms, t+26*ms, t+27*ms, t+28*ms, i+1, 1000*ms)
	}
	h := rec.history()
	o := &checker.Outcome{Result: checker.Result{Algorithm: "token", Scenario: "baseline", Backend: "local", Seed: 7,
		Verdict: checker.Safe, Expected: strp("safe"), DurationMs: 900, Operations: 120, AcquiresOk: 30,
		AcquireLatencyMs: checker.Latency{P50: 2, P99: 2, Max: 2}, ThroughputCSPerS: 33, LongestStallMs: 2, CheckerMs: 1,
		LockCheck: checker.Check{Result: "Ok", Ms: 1}, ResourceCheck: checker.Check{Result: "Ok", Ms: 1}, Matches: boolp(true)}}
	o.Analysis = analysisOf(h)
	return h, o
}

// bigRun simulates a contended run of the given length and operation count (4 operations per
// critical section), with timed faults and one client pause that causes a client-class violation
// at about two thirds of the run.
func bigRun(seed int64, clients int, dur time.Duration, nops int) (*history.History, *checker.Outcome) {
	rnd := rand.New(rand.NewSource(seed))
	ttl := 1000 * ms
	rec := newRecorder(history.Meta{Algorithm: "setnx-px", Scenario: "client-pause", Backend: "local", Seed: seed,
		Clients: clients, TTLNs: ttl, Expected: "unsafe-client", Started: "2026-11-21T23:59:00Z", Version: "test",
		Command: "lockchaos run --algorithm setnx-px --scenario client-pause --duration 10m --seed 1"})
	total := int64(dur)
	sections := nops / 4
	// Critical sections hand the lock on back to back; spread them over the run.
	gap := total / int64(sections+1)
	hold := gap * 6 / 10
	next := make([]int64, clients+1) // when each client next calls acquire
	lockFree := int64(0)
	value := int64(0)
	pauseAt := total * 2 / 3
	paused := false
	var violA, violB, violAcq int64
	var violAt int64
	for s := 0; s < sections; s++ {
		c := 1 + rnd.Intn(clients)
		call := next[c]
		grant := max(call, lockFree) + ms/5 + rnd.Int63n(ms/2+1)
		if grant > total {
			break
		}
		value++
		acq := rec.op(history.OpAcquire, c, 0, call, grant, history.TypeOk, func(_, d *history.Event) { d.ValidityNs, d.TTLNs = ttl, ttl })
		rec.op(history.OpRead, c, acq, grant+ms/20, grant+ms/10, history.TypeOk, func(_, d *history.Event) { d.Value = history.Int64(value - 1) })
		write := grant + hold
		if !paused && grant > pauseAt {
			// The pause: this holder stops before its write for TTL + 300 ms; the server
			// expires its key and the next client is granted meanwhile.
			paused = true
			rec.fault(100, "client-pause", "client-"+strconv.Itoa(c), "cs:before-write", grant+ms, grant+ttl+300*ms, "")
			c2 := c%clients + 1
			g2 := grant + ttl + ms
			a2 := rec.op(history.OpAcquire, c2, 0, grant+2*ms, g2, history.TypeOk, func(_, d *history.Event) { d.ValidityNs, d.TTLNs = ttl, ttl })
			rec.op(history.OpWrite, c2, a2, g2+hold, g2+hold+ms/10, history.TypeOk, func(i, _ *history.Event) { i.Value = history.Int64(value) })
			rec.op(history.OpRelease, c2, a2, g2+hold+ms/5, g2+hold+ms/4, history.TypeOk, nil)
			write = grant + ttl + 300*ms
			violA, violB, violAcq, violAt = a2, 0, acq, write
			next[c2] = g2 + hold + ms
		}
		w := rec.op(history.OpWrite, c, acq, write, write+ms/10, history.TypeOk, func(i, _ *history.Event) { i.Value = history.Int64(value) })
		if violAcq == acq {
			violB = w
		}
		rel := write + ms/5
		rec.op(history.OpRelease, c, acq, rel, rel+ms/10, history.TypeOk, nil)
		lockFree = rel + ms/10
		next[c] = lockFree + rnd.Int63n(gap+1)
	}
	// Timed faults: a latency fault every 30 s on a node, and a partition of one client.
	fid := int64(1)
	for t := 10 * int64(time.Second); t < total; t += 30 * int64(time.Second) {
		rec.fault(fid, "latency", "node-"+strconv.Itoa(int(fid%3)+1), "", t, t+2*int64(time.Second), "")
		fid++
	}
	rec.fault(fid, "partition", "client-2", "", total/3, total/3+5*int64(time.Second), "heal: proxy not found")
	h := rec.history()
	r := checker.Result{Algorithm: "setnx-px", Scenario: "client-pause", Backend: "local", Seed: seed, Verdict: checker.Unsafe,
		Expected: strp("unsafe-client"), ViolationClass: classp(checker.ClientClass), DurationMs: float64(total / ms),
		Operations: nops, AcquiresOk: sections, ExclusionViolations: 1, LostUpdates: 1,
		AcquireLatencyMs: checker.Latency{P50: 3.1, P99: 9.8, Max: 1001}, ThroughputCSPerS: float64(sections) / dur.Seconds(),
		LongestStallMs: 1000, CheckerMs: 850, ClassesSeen: []checker.Class{checker.ClientClass},
		LockCheck: checker.Check{Result: "Ok", Ms: 400}, ResourceCheck: checker.Check{Result: "Illegal", Ms: 420},
		FaultErrors: []string{"fault partition client-2: heal: proxy not found"}, Matches: boolp(true)}
	if violAcq != 0 {
		r.TTDMs = f64p(float64(violAt / ms))
		r.FirstViolation = &checker.Violation{Kind: "exclusion", Class: checker.ClientClass, AtMs: float64(violAt) / float64(ms),
			A: checker.OpRef{ID: violB, Op: "write", Acq: violAcq}, B: checker.OpRef{ID: violA, Op: "acquire"},
			Explanation: "a paused holder wrote after its lease expired"}
	}
	return h, &checker.Outcome{Result: r, Analysis: analysisOf(h)}
}
