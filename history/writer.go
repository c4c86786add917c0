package history

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// Writer appends events to a history file, one write(2) per line, so every event that was
// recorded is in the kernel's hands the moment Write returns and survives a SIGKILL of the
// harness. Sync forces the file to disk (the harness calls it at fault boundaries and at the end).
// A Writer is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	buf  []byte
	subs []func(Event)
	err  error
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

// Subscribe registers fn to be called with every event after it is written, in write order, while
// the writer's lock is held: fn must not block and must not call Write.
func (w *Writer) Subscribe(fn func(Event)) {
	w.mu.Lock()
	w.subs = append(w.subs, fn)
	w.mu.Unlock()
}

// Write appends one event. The first error is kept and returned by every later call and by Close.
func (w *Writer) Write(e Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
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

// Sync flushes the file to stable storage.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	return w.f.Sync()
}

// Close syncs and closes the file.
func (w *Writer) Close() error {
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
	if serr != nil {
		return fmt.Errorf("history: sync: %w", serr)
	}
	if cerr != nil {
		return fmt.Errorf("history: close: %w", cerr)
	}
	return nil
}
