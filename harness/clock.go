package harness

import (
	"math"
	"sync/atomic"
	"time"
)

// skewClock is a client's clock: real time moved by an offset and running at a rate, both set by
// the clock-skew fault while the client runs.
type skewClock struct {
	offset atomic.Int64  // ns
	rate   atomic.Uint64 // float64 bits; 0 means 1
	since  atomic.Int64  // unix ns when rate was set
}

func (c *skewClock) Now() time.Time {
	now := time.Now()
	off := time.Duration(c.offset.Load())
	if bits := c.rate.Load(); bits != 0 {
		rate := math.Float64frombits(bits)
		off += time.Duration(float64(now.UnixNano()-c.since.Load()) * (rate - 1))
	}
	return now.Add(off)
}

func (c *skewClock) set(offset time.Duration, rate float64) {
	c.offset.Store(int64(offset))
	c.since.Store(time.Now().UnixNano())
	if rate == 1 || rate == 0 {
		c.rate.Store(0)
	} else {
		c.rate.Store(math.Float64bits(rate))
	}
}
