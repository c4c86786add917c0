package faults_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

// TestLatency measures the fault where it acts: PINGs through client 1's proxy get slower by about
// the amount while it lasts (client 2's do not), and are fast again after heal. Not parallel: it
// measures time.
func TestLatency(t *testing.T) {
	c, env := redisPair(t, false)
	ctx := ctxT(t, 30*time.Second)
	const amount = 150 * time.Millisecond
	rc1 := rclient(t, proxied(t, c, 1, 0), 2*time.Second)
	rc2 := rclient(t, proxied(t, c, 2, 0), 2*time.Second)
	base := pingP50(t, ctx, rc1, 5)

	n, rec := startNemesis(t, env, []faults.Spec{{Kind: "latency", Clients: "1", Nodes: "redis-1", Amount: sz(amount)}}, 1)
	rec.waitStart(t, "latency", 5*time.Second)
	slow := pingP50(t, ctx, rc1, 5)
	other := pingP50(t, ctx, rc2, 5)
	n.HealAll()
	healed := pingP50(t, ctx, rc1, 5)
	t.Logf("PING p50 through client 1's proxy: %v before, %v with latency %v, %v after heal; client 2 meanwhile %v",
		base, slow, amount, healed, other)

	if rise := slow - base; rise < amount*8/10 || rise > amount+300*time.Millisecond {
		t.Errorf("p50 rose by %v with latency %v (want about the amount)", rise, amount)
	}
	if other >= amount*8/10 {
		t.Errorf("client 2's p50 is %v: the latency hit a link it does not target", other)
	}
	if healed >= amount*8/10 {
		t.Errorf("p50 after heal is %v: the latency was not removed", healed)
	}
	s := checkLines(t, rec, "latency", "client-1 → redis-1")
	if s.Detail == "" {
		t.Error("latency start line has no detail")
	}
}

// TestPartition shows what each partition does to a command sent while it is on, on a real
// redis-server: under partition (docs/design.md#faults) the bytes are held and the command executes when the
// link heals, on the same connection, as TCP retransmission delivers it across a real partition;
// under partition-reset it is dropped and never executes, and the connection is reset at the heal;
// partition-oneway holds only the stream it is given. Client 2's link is untouched throughout.
func TestPartition(t *testing.T) {
	t.Parallel()
	c, env := redisPair(t, false)
	ctx := ctxT(t, 60*time.Second)
	direct := rclient(t, nodeAddr(t, c, "redis-1"), 2*time.Second)
	rc2 := rclient(t, proxied(t, c, 2, 0), 2*time.Second)

	for _, tc := range []struct {
		kind, stream string
		during       bool // whether the SET executes while the fault is on
		after        bool // whether it has executed after the heal
		replied      bool // whether its reply reaches the sender on the same connection
	}{
		{"partition", "", false, true, true},
		{"partition-reset", "", false, false, false},
		{"partition-oneway", "", false, true, true}, // upstream by default
		{"partition-oneway", "downstream", true, true, true},
	} {
		t.Run(tc.kind+"/"+tc.stream, func(t *testing.T) {
			key := "k-" + tc.kind + "-" + tc.stream
			conn := dialRaw(t, proxied(t, c, 1, 0))
			if reply := rawCommand(t, conn, time.Second, "PING"); reply != "+PONG" {
				t.Fatalf("PING before the fault: %q", reply)
			}
			n, rec := startNemesis(t, env, []faults.Spec{{Kind: tc.kind, Clients: "1", Nodes: "redis-1", Stream: tc.stream}}, 1)
			rec.waitStart(t, tc.kind, 5*time.Second)

			if reply := rawCommand(t, conn, 300*time.Millisecond, "SET", key, "v"); reply != "" {
				t.Errorf("SET through client 1's cut link was answered while cut: %q", reply)
			}
			if err := rc2.Ping(ctx).Err(); err != nil {
				t.Errorf("client 2 is not partitioned, but PING: %v", err)
			}
			if got := waitValue(ctx, direct, key, 300*time.Millisecond); (got == "v") != tc.during {
				t.Errorf("while the fault is on the server has %q: executed %v, want %v", got, got == "v", tc.during)
			}

			n.HealAll()
			checkLines(t, rec, tc.kind, "client-1 → redis-1")
			if got := waitValue(ctx, direct, key, 2*time.Second); (got == "v") != tc.after {
				t.Errorf("after the heal the server has %q: the SET executed %v, want %v", got, got == "v", tc.after)
			}
			reply := readReply(conn, 2*time.Second)
			if (reply == "+OK") != tc.replied {
				t.Errorf("after the heal the sender read %q on its connection: replied %v, want %v", reply, reply == "+OK", tc.replied)
			}
			if tc.replied {
				if reply := rawCommand(t, conn, time.Second, "PING"); reply != "+PONG" {
					t.Errorf("the connection did not survive the partition: PING after the heal: %q", reply)
				}
			}
			after := rclient(t, proxied(t, c, 1, 0), 2*time.Second)
			if err := after.Set(ctx, key, "after", 0).Err(); err != nil {
				t.Fatalf("SET through client 1's link after heal: %v", err)
			}
		})
	}
}

// TestPartitionUnderLatency: a latency that heals while a partition of the same stream holds it
// (faults overlapping, as a soak draws them) hands the reply it was delaying to the hold, and
// every heal returns. The hold did not read its input: the latency's removal waited on it forever
// with the proxy's toxics locked, and every later heal hung (a 10-minute soak never ended). The
// reply arrives after the last heal, on its connection.
func TestPartitionUnderLatency(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 1, Proxies: true})
	env := &testEnv{c: c, clients: 1}
	conn := dialRaw(t, proxied(t, c, 1, 0))
	if reply := rawCommand(t, conn, time.Second, "PING"); reply != "+PONG" {
		t.Fatalf("PING before the faults: %q", reply)
	}
	// Replies are delayed 600 ms from 50 ms until 450 ms; from 150 ms they are held too, after it.
	_, rec := startNemesis(t, env, []faults.Spec{
		{Kind: "latency", Clients: "1", Amount: sz(600 * time.Millisecond), At: ms(50 * time.Millisecond), For: sz(400 * time.Millisecond)},
		{Kind: "partition", Clients: "1", Stream: "downstream", At: ms(150 * time.Millisecond), For: sz(900 * time.Millisecond)},
	}, 1)
	rec.waitStart(t, "partition", 5*time.Second)
	// The SET executes; its reply sits in the latency when the latency heals, the hold after it.
	if reply := rawCommand(t, conn, 200*time.Millisecond, "SET", "under-both", "v"); reply != "" {
		t.Errorf("SET's reply came through latency and partition at once: %q", reply)
	}
	rec.waitEnd(t, "latency", 5*time.Second) // the heal that hung
	rec.waitEnd(t, "partition", 5*time.Second)
	if reply := readReply(conn, 2*time.Second); reply != "+OK" {
		t.Errorf("after the heals the sender read %q on its connection, want the SET's +OK", reply)
	}
	if reply := rawCommand(t, conn, time.Second, "PING"); reply != "+PONG" {
		t.Errorf("the connection did not survive: PING after the heals: %q", reply)
	}
}

// TestPartitionClosedSender shows the one way a partition loses nothing yet cuts a conversation: a
// client whose own timeout closes its socket during the partition still has the bytes it wrote
// before the close delivered at the heal, as the kernel delivers them (docs/design.md#faults).
func TestPartitionClosedSender(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 1, Proxies: true})
	env := &testEnv{c: c, clients: 1}
	ctx := ctxT(t, 30*time.Second)
	direct := rclient(t, nodeAddr(t, c, "redis-1"), 2*time.Second)
	rc1 := rclient(t, proxied(t, c, 1, 0), 300*time.Millisecond)
	if err := rc1.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	n, rec := startNemesis(t, env, []faults.Spec{{Kind: "partition", Clients: "1"}}, 1)
	rec.waitStart(t, "partition", 5*time.Second)
	if err := rc1.Set(ctx, "late", "v", 0).Err(); !isTimeout(err) {
		t.Errorf("SET under the partition: %v, want the client's own timeout", err)
	}
	rc1.Close() // the client gives its connection up, as go-redis does after a timeout
	if got := waitValue(ctx, direct, "late", 300*time.Millisecond); got != "" {
		t.Errorf("the SET executed during the partition: %q", got)
	}
	n.HealAll()
	if got := waitValue(ctx, direct, "late", 2*time.Second); got != "v" {
		t.Errorf("after the heal the server has %q: the bytes sent before the close were lost", got)
	}
}

// TestPartitionZooKeeper shows the same on a real ZooKeeper: a create sent under partition is
// executed after the heal on the same session and connection, and answered; under partition-reset
// it never executes.
func TestPartitionZooKeeper(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.ZooKeeper, Nodes: 1, Clients: 2, Proxies: true})
	env := &testEnv{c: c, clients: 2}
	direct := zkConn(t, nodeAddr(t, c, "zk-1"))
	for _, tc := range []struct {
		kind     string
		executed bool
	}{{"partition", true}, {"partition-reset", false}} {
		t.Run(tc.kind, func(t *testing.T) {
			zc := zkConn(t, proxied(t, c, 1, 0))
			path := "/held-" + tc.kind
			n, rec := startNemesis(t, env, []faults.Spec{{Kind: tc.kind, Clients: "1"}}, 1)
			rec.waitStart(t, tc.kind, 5*time.Second)
			session := zc.SessionID()
			type result struct {
				path string
				err  error
			}
			done := make(chan result, 1)
			go func() {
				p, err := zc.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
				done <- result{p, err}
			}()
			time.Sleep(500 * time.Millisecond) // well inside the session timeout (4 s)
			if ok, _, err := direct.Exists(path); err != nil || ok {
				t.Errorf("the create executed while cut (exists %v, %v)", ok, err)
			}
			n.HealAll()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the create was never answered")
			}
			ok, _, err := direct.Exists(path)
			if err != nil || ok != tc.executed {
				t.Errorf("after the heal the node exists: %v (%v), want %v; the create returned %q, %v", ok, err, tc.executed, r.path, r.err)
			}
			if tc.executed && (r.err != nil || zc.SessionID() != session) {
				t.Errorf("the create returned %q, %v on session %#x (was %#x): want its reply on the same session", r.path, r.err, zc.SessionID(), session)
			}
		})
	}
}

// TestRefuse shows that refuse makes the client's proxy refuse connections at once, and heal
// brings it back on the same address.
func TestRefuse(t *testing.T) {
	t.Parallel()
	c, env := redisPair(t, false)
	ctx := ctxT(t, 30*time.Second)
	addr := proxied(t, c, 1, 0)
	rc1 := rclient(t, addr, 2*time.Second)
	rc2 := rclient(t, proxied(t, c, 2, 0), 2*time.Second)
	if err := rc1.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	n, rec := startNemesis(t, env, []faults.Spec{{Kind: "refuse", Clients: "1", Nodes: "redis-1"}}, 1)
	rec.waitStart(t, "refuse", 5*time.Second)
	t0 := time.Now()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		conn.Close()
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %s while refused: %v, want connection refused", addr, err)
	} else if d := time.Since(t0); d > time.Second {
		t.Errorf("refusal took %v: it should fail fast", d)
	}
	if err := rc1.Ping(ctx).Err(); err == nil {
		t.Error("PING through the refused link succeeded (old connection not closed)")
	}
	if err := rc2.Ping(ctx).Err(); err != nil {
		t.Errorf("client 2 is not refused, but PING: %v", err)
	}

	n.HealAll()
	checkLines(t, rec, "refuse", "client-1 → redis-1")
	if got := proxied(t, c, 1, 0); got != addr {
		t.Errorf("client 1's address changed from %s to %s", addr, got)
	}
	// A fresh client: go-redis's pool keeps returning its last dial error for a while after
	// refused dials, which would measure go-redis, not the link.
	after := rclient(t, addr, 2*time.Second)
	if v, err := after.Set(ctx, "k", "v", 0).Result(); err != nil || v != "OK" {
		t.Errorf("SET on %s after heal: %q, %v", addr, v, err)
	}
}

// dialRaw opens a plain TCP connection, so the test sees exactly what the link delivers: no client
// library that closes its connection on a timeout.
func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawConn{conn: conn, r: bufio.NewReader(conn)}
}

type rawConn struct {
	conn net.Conn
	r    *bufio.Reader
}

// rawCommand sends one RESP command and returns its reply's first line, or "" when none came
// within wait (the command stays in flight: readReply reads its reply later).
func rawCommand(t *testing.T, c *rawConn, wait time.Duration, args ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.conn.Write([]byte(b.String())); err != nil {
		t.Fatalf("write %v: %v", args, err)
	}
	return readReply(c, wait)
}

// readReply reads one reply line, or returns "" when none came within wait or the connection was
// closed (then the error's text, prefixed with "error:").
func readReply(c *rawConn, wait time.Duration) string {
	_ = c.conn.SetReadDeadline(time.Now().Add(wait))
	line, err := c.r.ReadString('\n')
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return ""
	case err != nil:
		return "error: " + err.Error()
	}
	return strings.TrimRight(line, "\r\n")
}

// waitValue polls key on the server until it has a value or within passes; "" when it has none.
func waitValue(ctx context.Context, rc *redis.Client, key string, within time.Duration) string {
	deadline := time.Now().Add(within)
	for {
		v, err := rc.Get(ctx, key).Result()
		if err == nil || time.Now().After(deadline) {
			return v
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// zkConn is a go-zookeeper connection to addr with a 4 s session, closed when the test ends.
func zkConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	zc, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatalf("zk connect %s: %v", addr, err)
	}
	t.Cleanup(zc.Close)
	for deadline := time.After(10 * time.Second); ; {
		select {
		case e := <-events:
			if e.State == zk.StateHasSession {
				return zc
			}
		case <-deadline:
			t.Fatalf("no session with %s", addr)
		}
	}
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}
