package wire

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
)

// These tests record the byte streams of real client libraries (go-redis, go-zookeeper) talking
// to a small fake server on the loopback interface, which itself cuts the client's stream with
// a request framer, and then check that both recorded directions frame the same whole and cut
// at every byte.

// link records one connection's two directions.
type link struct {
	mu       sync.Mutex
	requests bytes.Buffer // client → server
	replies  bytes.Buffer // server → client
	err      error        // a framing error in the server
}

// fakeServer accepts connections until the listener is closed, and serves each with serve,
// which gets every request the framer cuts and returns the bytes to reply (nil: none;
// close: hang up after replying).
type fakeServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	links []*link
}

func startFake(t *testing.T, newFramer func() Framer,
	serve func(m Message, raw []byte) (reply []byte, hangUp bool)) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l := &link{}
			s.mu.Lock()
			s.links = append(s.links, l)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				f := newFramer()
				var buf []byte
				rb := make([]byte, 64<<10)
				for {
					_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
					n, err := c.Read(rb)
					if err != nil {
						return
					}
					l.mu.Lock()
					l.requests.Write(rb[:n])
					l.mu.Unlock()
					buf = append(buf, rb[:n]...)
					for {
						k, m, err := f.Next(buf)
						if err != nil {
							l.mu.Lock()
							l.err = err
							l.mu.Unlock()
							return
						}
						if k == 0 {
							break
						}
						out, hangUp := serve(m, buf[:k])
						buf = buf[k:]
						l.mu.Lock()
						l.replies.Write(out)
						l.mu.Unlock()
						if _, err := c.Write(out); err != nil || hangUp {
							return
						}
					}
				}
			}()
		}
	}()
	return s
}

// stop closes the listener, waits for the connections to end and returns their recordings.
func (s *fakeServer) stop(t *testing.T) []*link {
	t.Helper()
	s.ln.Close()
	s.wg.Wait()
	for _, l := range s.links {
		if l.err != nil {
			t.Fatalf("fake server: %v", l.err)
		}
	}
	return s.links
}

func TestGoRedisStreams(t *testing.T) {
	var mu sync.Mutex
	store := map[string]string{}
	srv := startFake(t, NewRESPRequests, func(m Message, _ []byte) ([]byte, bool) {
		mu.Lock()
		defer mu.Unlock()
		arg := func(i int) string {
			if i < len(m.Args) {
				return m.Args[i]
			}
			return ""
		}
		switch m.Cmd {
		case "HELLO": // RESP3's map, with a nested array
			return []byte("%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n$7\r\nmodules\r\n*0\r\n"), false
		case "CLIENT":
			return []byte("+OK\r\n"), false
		case "PING":
			return []byte("+PONG\r\n"), false
		case "SET":
			if _, ok := store[arg(0)]; ok && (Pattern{cmd: "SET", flags: []string{"NX"}}).Match(m) {
				return []byte("_\r\n"), false
			}
			store[arg(0)] = arg(1)
			return []byte("+OK\r\n"), false
		case "GET":
			v, ok := store[arg(0)]
			if !ok {
				return []byte("_\r\n"), false
			}
			return []byte("$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"), false
		case "EVALSHA":
			return []byte("-NOSCRIPT No matching script. Please use EVAL.\r\n"), false
		case "EVAL": // the unlock script: delete the key if it holds the token
			if store[m.Keys[0]] == arg(3) {
				delete(store, m.Keys[0])
				return []byte(":1\r\n"), false
			}
			return []byte(":0\r\n"), false
		}
		return []byte("-ERR unknown command '" + m.Cmd + "'\r\n"), false
	})

	rdb := redis.NewClient(&redis.Options{
		Addr: srv.ln.Addr().String(), Protocol: 3, PoolSize: 1, MaxRetries: -1,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if ok, err := rdb.SetNX(ctx, "lock", "tok", 500*time.Millisecond).Result(); !ok || err != nil {
		t.Fatalf("SetNX: %v, %v", ok, err)
	}
	if ok, err := rdb.SetNX(ctx, "lock", "tok2", 500*time.Millisecond).Result(); ok || err != nil {
		t.Fatalf("second SetNX: %v, %v", ok, err)
	}
	if v, err := rdb.Get(ctx, "lock").Result(); v != "tok" || err != nil {
		t.Fatalf("Get: %q, %v", v, err)
	}
	unlock := redis.NewScript(`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`)
	if n, err := unlock.Run(ctx, rdb, []string{"lock"}, "tok").Int(); n != 1 || err != nil {
		t.Fatalf("unlock: %d, %v", n, err)
	}
	if _, err := rdb.Get(ctx, "lock").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("Get after unlock: %v", err)
	}
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Ping(ctx)
		p.SetNX(ctx, "a", "1", time.Second)
		p.Get(ctx, "a")
		return nil
	}); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	rdb.Close()
	links := srv.stop(t)

	var reqs, reps []Message
	for _, l := range links {
		rq := messages(checkSplits(t, NewRESPRequests, l.requests.Bytes()))
		rp := messages(checkSplits(t, NewRESPReplies, l.replies.Bytes()))
		if len(rq) != len(rp) {
			t.Fatalf("%d requests, %d replies", len(rq), len(rp))
		}
		reqs, reps = append(reqs, rq...), append(reps, rp...)
	}
	count := func(ms []Message, ok func(Message) bool) (n int) {
		for _, m := range ms {
			checkMessage(t, m)
			if ok(m) {
				n++
			}
		}
		return n
	}
	setNX, _ := ParsePattern("SET NX")
	for _, c := range []struct {
		what string
		got  int
		want int
	}{
		{"HELLO, Control", count(reqs, func(m Message) bool { return m.Cmd == "HELLO" && m.Control }), len(links)},
		{"SET NX on lock", count(reqs, func(m Message) bool {
			return setNX.Match(m) && len(m.Keys) == 1 && m.Keys[0] == "lock"
		}), 2},
		{"SET NX on a", count(reqs, func(m Message) bool { return setNX.Match(m) && m.Keys[0] == "a" }), 1},
		{"EVALSHA on lock", count(reqs, func(m Message) bool { return m.Cmd == "EVALSHA" && m.Keys[0] == "lock" }), 1},
		{"EVAL on lock", count(reqs, func(m Message) bool { return m.Cmd == "EVAL" && m.Keys[0] == "lock" }), 1},
		{"GET", count(reqs, func(m Message) bool { return m.Cmd == "GET" }), 3},
		{"HELLO's map", count(reps, func(m Message) bool { return m.Text == "%3" }), len(links)},
		{"nulls", count(reps, func(m Message) bool { return m.Null }), 2},
		{"NOSCRIPT", count(reps, func(m Message) bool { return m.Err && m.Text[:9] == "-NOSCRIPT" }), 1},
		{":1", count(reps, func(m Message) bool { return m.Text == ":1" }), 1},
		{"$3", count(reps, func(m Message) bool { return m.Text == "$3" }), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d\nrequests: %+v\nreplies: %+v", c.what, c.got, c.want, reqs, reps)
		}
	}
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func TestGoZookeeperStreams(t *testing.T) {
	stat := jute(nil).stat()
	var zxid int64
	var zmu sync.Mutex
	pinged := make(chan struct{}, 1)
	srv := startFake(t, NewZKRequests, func(m Message, raw []byte) ([]byte, bool) {
		zmu.Lock()
		defer zmu.Unlock()
		zxid++
		ok := reply(m.Xid, zxid, 0)
		switch m.Cmd {
		case "connect": // 600 ms: go-zookeeper pings every 200 ms
			return zkConnectResponse(600, 0x1000002a), false
		case "ping":
			select {
			case pinged <- struct{}{}:
			default:
			}
			return ok.frame(), false
		case "create":
			return ok.str(m.Keys[0] + "0000000001").frame(), false
		case "getChildren2":
			return append(ok.i32(1).str("n-0000000001"), stat...).frame(), false
		case "exists": // no node; then the node appears and the exist watch fires
			return append(reply(m.Xid, zxid, -101).frame(),
				reply(-1, -1, 0).i32(1).i32(3).str(m.Keys[0]).frame()...), false
		case "delete":
			return ok.frame(), false
		case "closeSession":
			return ok.frame(), true
		}
		return reply(m.Xid, zxid, -6).frame(), false // Unimplemented
	})

	conn, events, err := zk.Connect([]string{srv.ln.Addr().String()}, time.Second,
		zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.After(20 * time.Second)
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
		select {
		case <-timeout:
			t.Fatal("no session")
		default:
		}
	}
	path, err := conn.Create("/lock/n-", []byte("tok"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil || path != "/lock/n-0000000001" {
		t.Fatalf("Create: %q, %v", path, err)
	}
	if kids, _, err := conn.Children("/lock"); err != nil || len(kids) != 1 {
		t.Fatalf("Children: %v, %v", kids, err)
	}
	ok, _, ch, err := conn.ExistsW("/lock/n-0000000000")
	if ok || err != nil {
		t.Fatalf("ExistsW: %v, %v", ok, err)
	}
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeCreated {
			t.Fatalf("watch: %+v", ev)
		}
	case <-timeout:
		t.Fatal("no watch event")
	}
	if err := conn.Delete(path, -1); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	select {
	case <-pinged:
	case <-timeout:
		t.Fatal("no ping")
	}
	conn.Close()
	links := srv.stop(t)
	if len(links) != 1 {
		t.Fatalf("%d connections", len(links))
	}

	reqs := messages(checkSplits(t, NewZKRequests, links[0].requests.Bytes()))
	reps := messages(checkSplits(t, NewZKReplies, links[0].replies.Bytes()))
	find := func(ms []Message, ok func(Message) bool) *Message {
		for i := range ms {
			checkMessage(t, ms[i])
			if ok(ms[i]) {
				return &ms[i]
			}
		}
		t.Errorf("not found among\n%+v", ms)
		return &Message{}
	}
	if m := reqs[0]; m.Cmd != "connect" || !m.Control {
		t.Errorf("first request: %+v", m)
	}
	if m := reps[0]; !m.Control || m.Text != "connected session 0x1000002a timeout 600ms" {
		t.Errorf("first reply: %+v", m)
	}
	create := find(reqs, func(m Message) bool { return m.Cmd == "create" })
	if !reflect2(create.Keys, []string{"/lock/n-"}) || create.Text != "create /lock/n- (xid "+strconv.Itoa(int(create.Xid))+")" {
		t.Errorf("create: %+v", *create)
	}
	find(reqs, func(m Message) bool { return m.Cmd == "getChildren2" && reflect2(m.Keys, []string{"/lock"}) })
	exists := find(reqs, func(m Message) bool { return m.Cmd == "exists" })
	find(reqs, func(m Message) bool { return m.Cmd == "delete" && reflect2(m.Keys, []string{path}) })
	find(reqs, func(m Message) bool { return m.Cmd == "ping" && m.Xid == -2 && m.Control })
	find(reqs, func(m Message) bool { return m.Cmd == "closeSession" && !m.Control })
	find(reps, func(m Message) bool {
		return m.Xid == exists.Xid && m.Err && m.Text == "reply xid "+strconv.Itoa(int(exists.Xid))+" err -101 (NoNode)"
	})
	find(reps, func(m Message) bool {
		return m.Push && m.Text == "event NodeCreated /lock/n-0000000000" && reflect2(m.Keys, []string{"/lock/n-0000000000"})
	})
	find(reps, func(m Message) bool { return m.Xid == -2 && m.Control && m.Text == "ping reply" })
	if len(reqs) != len(reps)-1 { // the watch event answers no request
		t.Errorf("%d requests, %d replies", len(reqs), len(reps))
	}
}

func reflect2(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
