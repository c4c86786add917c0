package history

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWriterBatched: with FlushEvery, events from many goroutines land whole and in write order,
// Sync puts everything queued so far in the file (what a SIGKILL right after it would leave), and
// Close writes the rest.
func TestWriterBatched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	w, err := Create(path, Meta{Algorithm: "token", Scenario: "s", Backend: "local"})
	if err != nil {
		t.Fatal(err)
	}
	w.FlushEvery(time.Hour) // only Sync and Close write: the test controls when
	var wg sync.WaitGroup
	for c := 1; c <= 8; c++ {
		wg.Go(func() {
			for i := range 500 {
				if err := w.Write(Event{Type: TypeInvoke, ID: int64(c*1000 + i), Op: OpAcquire, Client: c, Lock: "lock", AtNs: int64(i)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Fatalf("%d lines before Sync, want only the meta line (events are queued)", n)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	h, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Events) != 4000 {
		t.Fatalf("%d events after Sync, want 4000", len(h.Events))
	}
	last := map[int]int64{}
	for _, e := range h.Events {
		if prev, ok := last[e.Client]; ok && e.ID <= prev {
			t.Fatalf("client %d: event %d after %d: out of order", e.Client, e.ID, prev)
		}
		last[e.Client] = e.ID
	}
	if err := w.Write(Event{Type: TypeOk, ID: 1001, AtNs: 9}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if h, err = ReadFile(path); err != nil || len(h.Events) != 4001 {
		t.Fatalf("after Close: %d events, err %v; want 4001", len(h.Events), err)
	}
}

// TestWriteStampedInTimeOrder: WriteStamped reads the clock under the writer's lock, so the file
// is in clock order however the writers interleave. The clock here is a counter: the n-th event
// written must carry n.
func TestWriteStampedInTimeOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	w, err := Create(path, Meta{Algorithm: "token", Scenario: "s", Backend: "local"})
	if err != nil {
		t.Fatal(err)
	}
	w.FlushEvery(time.Millisecond)
	var clock atomic.Int64
	now := func() int64 { return clock.Add(1) }
	var wg sync.WaitGroup
	for c := 1; c <= 8; c++ {
		wg.Go(func() {
			for i := range 500 {
				runtime.Gosched()
				if err := w.WriteStamped(Event{Type: TypeInvoke, ID: int64(c*1000 + i), Op: OpAcquire, Client: c, Lock: "lock"}, now); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Events) != 4000 {
		t.Fatalf("%d events, want 4000", len(h.Events))
	}
	for i, e := range h.Events {
		if e.AtNs != int64(i+1) {
			t.Fatalf("line %d (client %d) stamped %d, want %d: stamps out of file order", i+2, e.Client, e.AtNs, i+1)
		}
	}
}
