package soak

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/checker"
)

// liveSegmentOps is the fewest operations of a segment the live check takes: a few seconds of a
// contended lock's, so a violation shows seconds after it happened.
const liveSegmentOps = 2000

// tailPoll is how often a reader at the end of a history still being written looks again.
const tailPoll = 100 * time.Millisecond

// tail reads a file that is still being written: at its end it waits for more, until done is set
// and everything written has been read. It waits for the file to appear.
type tail struct {
	path string
	f    *os.File
	done *atomic.Bool
}

func (t *tail) Read(b []byte) (int, error) {
	for {
		if t.f == nil {
			f, err := os.Open(t.path)
			switch {
			case err == nil:
				t.f = f
				continue
			case !errors.Is(err, os.ErrNotExist):
				return 0, err
			case t.done.Load():
				return 0, io.EOF // the run ended before it wrote a history
			}
		} else {
			// Read done before reading: set, everything written is in the file now.
			finished := t.done.Load()
			n, err := t.f.Read(b)
			if n > 0 || (err != nil && !errors.Is(err, io.EOF)) {
				return n, err
			}
			if finished {
				return 0, io.EOF
			}
		}
		time.Sleep(tailPoll)
	}
}

// watch is the live check of one run.
type watch struct {
	done  atomic.Bool
	wg    sync.WaitGroup
	mu    sync.Mutex
	last  checker.Progress
	err   error
	close func()
}

// startWatch checks the history at path as it is written (checker.Watch), telling seen after each
// segment.
func startWatch(path string, seen func(checker.Progress)) *watch {
	w := &watch{last: checker.Progress{FirstViolationMs: -1}}
	t := &tail{path: path, done: &w.done}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		err := checker.Watch(t, checker.Options{}, liveSegmentOps, func(p checker.Progress) {
			w.mu.Lock()
			w.last = p
			w.mu.Unlock()
			seen(p)
		})
		// A history the live check cannot read in order is checked whole at the end anyway.
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
	}()
	w.close = func() {
		if t.f != nil {
			t.f.Close()
		}
	}
	return w
}

// stop waits for the live check to read the history to its end (call it once the run ended).
func (w *watch) stop() Live {
	w.done.Store(true)
	w.wg.Wait()
	w.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	l := Live{Progress: w.last}
	if w.err != nil {
		l.Error = w.err.Error()
	}
	return l
}

// Live is what the live check saw: the progress after the last segment, or why it stopped.
type Live struct {
	checker.Progress
	Error string `json:"error,omitempty"`
}
