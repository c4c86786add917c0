package cluster

import (
	"context"
	"io"
	"net"
	"runtime"
	"strings"
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

// proxied starts a fresh embedded proxy to upstream and returns its link and its address.
func proxied(t *testing.T, upstream string) (Link, string) {
	t.Helper()
	ps := newProxies()
	t.Cleanup(ps.stopAll)
	k := linkKey{client: 1, node: "upstream"}
	addr, err := ps.add(k, upstream)
	if err != nil {
		t.Fatal(err)
	}
	p, _, _ := ps.get(k)
	return embeddedLink{p}, addr
}

// dialProxy connects to addr and waits until the proxy has made its link for the connection.
func dialProxy(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	return conn
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
	l, addr := proxied(t, upstream)
	conn := dialProxy(t, addr)
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

// echo answers every line it reads on each connection it accepts.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestHeldRepliesToAClosedClient: replies held by a partition for a client that closed its
// socket meanwhile. The heal must not wait on a reader that is gone (toxiproxy v2.5.0 stopped
// reading a link's output when its destination failed, so the hold's delivery waited out its 5 s
// bound at every heal, and the stages behind it blocked for good), and once both ends are closed
// the proxy keeps no goroutine of the connection.
func TestHeldRepliesToAClosedClient(t *testing.T) {
	ctx := context.Background()
	l, addr := proxied(t, echo(t))
	conn := dialProxy(t, addr)
	if err := l.AddToxic(ctx, "cut", HoldToxic, "downstream", nil); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := conn.Write([]byte("GET lock\r\n")); err != nil {
			t.Fatal(i, err)
		}
		time.Sleep(20 * time.Millisecond) // one reply each
	}
	if len(connGoroutines()) == 0 {
		t.Fatal("no goroutine of the open connection found: connGoroutines no longer knows toxiproxy's or echo's frames")
	}
	conn.Close()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := l.RemoveToxic(ctx, "cut"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the heal took %v: it waited on the closed client's reader (toxiproxy's 5 s bound)", d.Round(time.Millisecond))
	}
	deadline := time.Now().Add(5 * time.Second)
	left := connGoroutines()
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		left = connGoroutines()
	}
	if len(left) > 0 {
		t.Errorf("%d goroutines of the connection left 5 s after both ends closed:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// connGoroutines returns the stacks of the goroutines that serve a proxied connection:
// toxiproxy's link readers, writers and toxic stubs, and echo's handler. (Counting every
// goroutine instead raced with the proxy's own accept-loop helpers, which start after Listen.)
func connGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var conn []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "toxiproxy/v2.(*ToxicLink)") ||
			strings.Contains(g, "toxiproxy/v2/toxics.") ||
			strings.Contains(g, "cluster.echo.func2.1") {
			conn = append(conn, g)
		}
	}
	return conn
}
