package history

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Writer appends events to a history file. By default every Write is one write(2), so every
// event that was recorded is in the kernel's hands the moment Write returns and survives a
// SIGKILL of the harness. With FlushEvery, Write only queues the event and a background flusher
// encodes and writes each batch with one write(2): the clients no longer wait for the encoder or
// the system call, and a SIGKILL loses at most the events of the last interval. Sync writes what
// is queued and forces the file to disk (the harness calls it at fault boundaries and at the end).
// A Writer is safe for concurrent use.
type Writer struct {
	mu      sync.Mutex // guards pending, subs, err and f
	f       *os.File
	pending []Event // queued by Write, not yet written (FlushEvery only)
	batched bool
	subs    []func(Event)
	err     error

	flushMu sync.Mutex // serializes the file writes, so batches land in order
	buf     []byte     // encoding buffer, under flushMu
	spare   []Event    // the other half of the double buffer, under flushMu
	stop    chan struct{}
	done    chan struct{}
}

// Create creates (or truncates) the history file at path and writes the meta line.
func Create(path string, meta Meta) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	meta.Type = TypeMeta
	line, err := json.Marshal(meta)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("history: encode meta: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return nil, fmt.Errorf("history: write meta: %w", err)
	}
	return &Writer{f: f}, nil
}

// FlushEvery makes Write queue events, written in one batch every interval (and by Sync and
// Close) by a background goroutine that Close stops. Call it once, before the first Write.
//
// Write then only appends the event to a queue under the writer's lock: the JSON encoding and the
// write(2) happen on the flusher's goroutine, off the callers' path. What a SIGKILL can lose is
// what was queued since the last batch went to write(2): one interval of events (plus the batch
// being encoded at that moment), longer only when the flusher itself is not scheduled for a while
// (an overloaded machine, a stop-the-world pause). Sync bounds it at the moments that matter.
func (w *Writer) FlushEvery(interval time.Duration) {
	w.mu.Lock()
	w.batched = true
	w.mu.Unlock()
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				_ = w.flush()
			}
		}
	}()
}

// Subscribe registers fn to be called with every event as it is written (queued, with
// FlushEvery), in write order, while the writer's lock is held: fn must not block and must not
// call Write.
func (w *Writer) Subscribe(fn func(Event)) {
	w.mu.Lock()
	w.subs = append(w.subs, fn)
	w.mu.Unlock()
}

// Write appends one event. The first error is kept and returned by every later call and by Close.
func (w *Writer) Write(e Event) error { return w.write(e, nil) }

// WriteStamped is Write with the event's AtNs set to now() under the writer's lock, so that the
// events written so land in the file in time order. A caller that read its clock before Write
// could be descheduled in between and put an earlier time after a later one (1.2 ms seen between
// two clients of a run under -race on 2 busy cores).
func (w *Writer) WriteStamped(e Event, now func() int64) error { return w.write(e, now) }

func (w *Writer) write(e Event, now func() int64) error {
	w.mu.Lock()
	if now != nil {
		e.AtNs = now()
	}
	if w.err != nil {
		defer w.mu.Unlock()
		return w.err
	}
	if w.batched {
		w.pending = append(w.pending, e)
		for _, fn := range w.subs {
			fn(e)
		}
		w.mu.Unlock()
		return nil
	}
	defer w.mu.Unlock()
	w.buf = AppendJSON(w.buf[:0], e)
	if _, err := w.f.Write(w.buf); err != nil {
		w.err = fmt.Errorf("history: write: %w", err)
		return w.err
	}
	for _, fn := range w.subs {
		fn(e)
	}
	return nil
}

// flush writes the queued events with one write(2). Writers are held only to swap the queue.
func (w *Writer) flush() error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	batch := w.pending
	w.pending = w.spare[:0]
	f, err := w.f, w.err
	w.mu.Unlock()
	w.spare = batch
	if err != nil || len(batch) == 0 || f == nil {
		return err
	}
	w.buf = w.buf[:0]
	for i := range batch {
		w.buf = AppendJSON(w.buf, batch[i])
		batch[i] = Event{} // drop the references (values, strings) the queue held
	}
	if _, werr := f.Write(w.buf); werr != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = fmt.Errorf("history: write: %w", werr)
		}
		err = w.err
		w.mu.Unlock()
	}
	return err
}

// Sync writes the queued events and flushes the file to stable storage.
func (w *Writer) Sync() error {
	if err := w.flush(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.f == nil {
		return nil
	}
	return w.f.Sync()
}

// Close writes the queued events, stops the flusher, syncs and closes the file.
func (w *Writer) Close() error {
	if w.stop != nil {
		select {
		case <-w.stop:
		default:
			close(w.stop)
		}
		<-w.done
	}
	ferr := w.flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return w.err
	}
	serr := w.f.Sync()
	cerr := w.f.Close()
	w.f = nil
	if w.err != nil {
		return w.err
	}
	if ferr != nil {
		return ferr
	}
	if serr != nil {
		return fmt.Errorf("history: sync: %w", serr)
	}
	if cerr != nil {
		return fmt.Errorf("history: close: %w", cerr)
	}
	return nil
}
