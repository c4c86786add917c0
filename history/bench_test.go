package history

import (
	"path/filepath"
	"testing"
)

// A parallel run reads its file back: every line written once, whole, in one piece.
func checkLines(b *testing.B, path string, w *Writer, want int) {
	b.Helper()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	h, err := ReadFile(path)
	if err != nil {
		b.Fatalf("read back: %v", err)
	}
	if len(h.Events) != want {
		b.Fatalf("read back %d events, wrote %d", len(h.Events), want)
	}
}

// benchEvents are the eight lines of one critical section, as the harness records them.
func benchEvents() []Event {
	v := int64(41)
	w := int64(42)
	return []Event{
		{Type: TypeInvoke, ID: 17, Op: OpAcquire, Client: 3, Lock: "lock-3", AtNs: 1203400},
		{Type: TypeOk, ID: 17, AtNs: 1250100, ValidityNs: 1e9, TTLNs: 1e9},
		{Type: TypeInvoke, ID: 18, Op: OpRead, Client: 3, Lock: "lock-3", Acq: 17, AtNs: 1251000},
		{Type: TypeOk, ID: 18, AtNs: 1251200, Value: &v},
		{Type: TypeInvoke, ID: 19, Op: OpWrite, Client: 3, Lock: "lock-3", Acq: 17, AtNs: 1301000, Value: &w},
		{Type: TypeOk, ID: 19, AtNs: 1301300},
		{Type: TypeInvoke, ID: 20, Op: OpRelease, Client: 3, Lock: "lock-3", Acq: 17, AtNs: 1302000},
		{Type: TypeOk, ID: 20, AtNs: 1302500},
	}
}

// BenchmarkAppendJSON is the encoding cost of one event.
func BenchmarkAppendJSON(b *testing.B) {
	evs := benchEvents()
	b.ReportAllocs()
	var buf []byte
	for i := range b.N {
		buf = AppendJSON(buf[:0], evs[i%len(evs)])
	}
}

// BenchmarkWriter is the cost of one recorded event, written to a file: from one goroutine (one
// client) and from many at once (the recorder's lock contention).
func BenchmarkWriter(b *testing.B) {
	evs := benchEvents()
	open := func(b *testing.B) (*Writer, string) {
		path := filepath.Join(b.TempDir(), "history.jsonl")
		w, err := Create(path, Meta{Algorithm: "token", Clients: 8})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { w.Close() })
		return w, path
	}
	b.Run("serial", func(b *testing.B) {
		w, _ := open(b)
		b.ReportAllocs()
		for i := range b.N {
			if err := w.Write(evs[i%len(evs)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel-8", func(b *testing.B) {
		w, path := open(b)
		b.ReportAllocs()
		b.SetParallelism(4) // 4 × GOMAXPROCS(2) goroutines
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if err := w.Write(evs[i%len(evs)]); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
		b.StopTimer()
		checkLines(b, path, w, b.N)
	})
}
