package cluster

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// sink accepts one connection and hands over what it read once the sender closed (EOF).
func sink(t *testing.T) (addr string, got <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		ch <- string(b)
	}()
	return ln.Addr().String(), ch
}

// TestOverlappingHoldsClosedSender: two partitions overlap on one stream, the sender writes
// and closes its socket under both, the first heals, then the second, then another fault
// comes to the same proxy. What was written arrives after the last heal and not before, and
// the proxy takes the later fault. toxiproxy v2.5.0 left the first hold's stub on the link when
// the stream had closed (RemoveToxic's early return), so the second removal acted on that stale
// stub — the second hold never let go — and the later AddToxic indexed the chain past its end and
// panicked the process (a ZooKeeper soak died so): third_party/toxiproxy carries the fix.
func TestOverlappingHoldsClosedSender(t *testing.T) {
	ctx := context.Background()
	upstream, got := sink(t)
	ps := newProxies()
	t.Cleanup(ps.stopAll)
	k := linkKey{client: 1, node: "sink"}
	addr, err := ps.add(k, upstream)
	if err != nil {
		t.Fatal(err)
	}
	p, _, _ := ps.get(k)
	l := embeddedLink{p}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the proxy has made its link
	for _, name := range []string{"cut-a", "cut-b"} {
		if err := l.AddToxic(ctx, name, HoldToxic, "upstream", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Write([]byte("DEL lock\r\n")); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	time.Sleep(100 * time.Millisecond) // the close has reached the holds

	if err := l.RemoveToxic(ctx, "cut-a"); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		t.Fatalf("the server got %q while the second partition held the stream", b)
	case <-time.After(200 * time.Millisecond):
	}
	if err := l.RemoveToxic(ctx, "cut-b"); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if b != "DEL lock\r\n" {
			t.Errorf("the server got %q after the heal, want the DEL sent before the close", b)
		}
	case <-time.After(5 * time.Second):
		t.Error("the DEL never arrived after both partitions healed")
	}
	// A later fault on the same proxy (the old link may still be on its way out).
	if err := l.AddToxic(ctx, "later", "latency", "upstream", map[string]any{"latency": 10}); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveToxic(ctx, "later"); err != nil {
		t.Fatal(err)
	}
}
