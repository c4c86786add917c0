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

// read returns the counter. With fencing, the reader's fence counts as seen: a holder that read
// under a newer fence has begun its read-modify-write, so a stale holder's write that lands after
// that read is rejected too — otherwise the stale write would slip in between the new holder's
// read and its write, and the new holder's increment would overwrite it (a lost update that
// fencing on writes alone lets through).
func (r *resource) read(fence uint64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fencing && fence > r.maxFence {
		r.maxFence = fence
	}
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
