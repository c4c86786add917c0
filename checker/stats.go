package checker

import (
	"slices"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// The plain counts and the performance numbers of a result: acquires_failed counts acquires
// that gave the client no lease, those that failed and those with an unknown outcome. Latency is
// measured over successful acquires only, from call to return. Throughput is completed critical
// sections (successful writes) per second of the run.

// tally counts r's acquires and rejected writes into res, and returns the latencies of the
// successful acquires and the number of successful writes.
func (r *run) tally(res *Result) (lat []int64, writes int) {
	for i := range r.ops {
		o := &r.ops[i]
		switch o.Op {
		case history.OpAcquire:
			if o.Ok() {
				res.AcquiresOk++
				lat = append(lat, o.Return-o.Call)
			} else {
				res.AcquiresFailed++
			}
		case history.OpWrite:
			if o.Ok() {
				writes++
			}
			if staleRejected(o) {
				res.StaleWritesRejected++
			}
		}
	}
	return lat, writes
}

// finishCounts fills the numbers of a run of ops operations ending at end from the latencies of
// its successful acquires (reordered) and its successful writes.
func finishCounts(res *Result, lat []int64, writes, ops int, end int64) {
	res.Operations = ops
	res.DurationMs = ms(end)
	if end > 0 {
		res.ThroughputCSPerS = float64(writes) / time.Duration(end).Seconds()
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		res.AcquireLatencyMs = Latency{P50: ms(rank(lat, 0.50)), P99: ms(rank(lat, 0.99)), Max: ms(lat[len(lat)-1])}
	}
}

// rank is the nearest-rank percentile of sorted xs.
func rank(xs []int64, p float64) int64 {
	i := int(p*float64(len(xs))+0.999999999) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}
