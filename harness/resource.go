package harness

import (
	"errors"
	"sync"
)

// errStaleFence is the resource's refusal of a write whose fence is below the highest seen. Its
// text is matched by the checker (history: "stale fence").
var errStaleFence = errors.New("stale fence")

// resource is the shared counter the clients protect with the lock. It lives in the harness, so its
// operations are exact and instant: every anomaly in it comes from the lock.
type resource struct {
	mu       sync.Mutex
	value    int64
	maxFence uint64
	fencing  bool
}

func (r *resource) read() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.value
}

func (r *resource) write(v int64, fence uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fencing {
		if fence < r.maxFence {
			return errStaleFence
		}
		r.maxFence = fence
	}
	r.value = v
	return nil
}
