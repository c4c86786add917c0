package wire

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// jute encodes ZooKeeper records by hand, following zookeeper.jute: big-endian int and long,
// one-byte boolean, int32-length-prefixed ustring and buffer.
type jute []byte

func (j jute) i32(v int32) jute  { return binary.BigEndian.AppendUint32(j, uint32(v)) }
func (j jute) i64(v int64) jute  { return binary.BigEndian.AppendUint64(j, uint64(v)) }
func (j jute) str(s string) jute { return append(j.i32(int32(len(s))), s...) }
func (j jute) null() jute        { return j.i32(-1) }
func (j jute) boolean(v bool) jute {
	if v {
		return append(j, 1)
	}
	return append(j, 0)
}

// frame puts the length prefix in front of a record.
func (j jute) frame() []byte { return append(jute(nil).i32(int32(len(j))), j...) }

// stat is a Stat record: czxid, mzxid, ctime, mtime, version, cversion, aversion,
// ephemeralOwner, dataLength, numChildren, pzxid.
func (j jute) stat() jute {
	return j.i64(1).i64(2).i64(3).i64(4).i32(0).i32(1).i32(0).i64(0x100).i32(0).i32(1).i64(5)
}

// req is a RequestHeader.
func req(xid, op int32) jute { return jute(nil).i32(xid).i32(op) }

// reply is a ReplyHeader.
func reply(xid int32, zxid int64, err int32) jute { return jute(nil).i32(xid).i64(zxid).i32(err) }

// zkConnectRequest is a ConnectRequest as go-zookeeper sends it (no readOnly) or as the Java
// client does (with it).
func zkConnectRequest(session int64, readOnly bool) []byte {
	j := jute(nil).i32(0).i64(0).i32(4000).i64(session).str(strings.Repeat("\x00", 16))
	if readOnly {
		j = j.boolean(false)
	}
	return j.frame()
}

func zkConnectResponse(timeout int32, session int64) []byte {
	return jute(nil).i32(0).i32(timeout).i64(session).str("0123456789abcdef").boolean(false).frame()
}

func TestZKRequests(t *testing.T) {
	openACL := func(j jute) jute { return j.i32(1).i32(31).str("world").str("anyone") }
	tests := []struct {
		name string
		in   []byte
		want Message
	}{
		{"connect", zkConnectRequest(0, false), Message{
			Cmd: "connect", Control: true, Text: "connect session 0x0 timeout 4000ms"}},
		{"create", openACL(req(5, 1).str("/lock/n-").str("data")).i32(3).frame(), Message{
			Cmd: "create", Keys: []string{"/lock/n-"}, Xid: 5, Text: "create /lock/n- (xid 5)"}},
		{"getChildren2", req(6, 12).str("/lock").boolean(false).frame(), Message{
			Cmd: "getChildren2", Keys: []string{"/lock"}, Xid: 6, Text: "getChildren2 /lock (xid 6)"}},
		{"exists", req(7, 3).str("/lock/n-0000000000").boolean(true).frame(), Message{
			Cmd: "exists", Keys: []string{"/lock/n-0000000000"}, Xid: 7,
			Text: "exists /lock/n-0000000000 (xid 7)"}},
		{"delete", req(8, 2).str("/lock/n-0000000001").i32(-1).frame(), Message{
			Cmd: "delete", Keys: []string{"/lock/n-0000000001"}, Xid: 8,
			Text: "delete /lock/n-0000000001 (xid 8)"}},
		{"ping", req(-2, 11).frame(), Message{Cmd: "ping", Xid: -2, Control: true, Text: "ping (xid -2)"}},
		{"auth", req(-4, 100).i32(0).str("digest").str("user:pw").frame(), Message{
			Cmd: "auth", Xid: -4, Control: true, Text: "auth digest (xid -4)"}},
		{"setWatches", req(-8, 101).i64(9).i32(1).str("/lock/a").i32(0).i32(0).frame(), Message{
			Cmd: "setWatches", Xid: -8, Control: true, Text: "setWatches (xid -8)"}},
		{"setWatches2 with an ordinary xid", req(9, 105).i64(9).i32(0).i32(0).i32(0).i32(0).i32(0).frame(),
			Message{Cmd: "setWatches2", Xid: 9, Control: true, Text: "setWatches2 (xid 9)"}},
		{"multi", req(10, 14).i32(2).boolean(false).i32(-1).str("/a").i32(-1).i32(-1).boolean(true).i32(-1).frame(),
			Message{Cmd: "multi", Xid: 10, Text: "multi (xid 10)"}},
		{"createTTL", openACL(req(11, 21).str("/t").str("")).i32(5).i64(1000).frame(), Message{
			Cmd: "createTTL", Keys: []string{"/t"}, Xid: 11, Text: "createTTL /t (xid 11)"}},
		{"null path", req(12, 4).null().boolean(false).frame(), Message{
			Cmd: "getData", Xid: 12, Text: "getData (xid 12)"}},
		{"bad path", req(13, 4).i32(100).str("/x").frame(), Message{
			Cmd: "getData", Xid: 13, Text: "getData (bad path) (xid 13)"}},
		{"long path", req(14, 2).str("/" + strings.Repeat("p", 99)).i32(-1).frame(), Message{
			Cmd: "delete", Keys: []string{"/" + strings.Repeat("p", 99)}, Xid: 14,
			Text: "delete /" + strings.Repeat("p", MaxText-11) + "..."}},
		{"whoAmI", req(15, 107).frame(), Message{Cmd: "whoAmI", Xid: 15, Text: "whoAmI (xid 15)"}},
		{"unknown opcode", req(16, 999).frame(), Message{Cmd: "op999", Xid: 16, Text: "op999 (xid 16)"}},
		{"closeSession", req(17, -11).frame(), Message{Cmd: "closeSession", Xid: 17, Text: "closeSession (xid 17)"}},
	}
	var stream []byte
	var want []Message
	for _, tt := range tests {
		stream = append(stream, tt.in...)
		want = append(want, tt.want)
	}
	got := messages(checkSplits(t, NewZKRequests, stream))
	for i := range tests {
		if i >= len(got) || !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s:\ngot  %#v\nwant %#v", tests[i].name, got[min(i, len(got)-1)], want[i])
		}
		checkMessage(t, got[i])
	}

	// The Java client's ConnectRequest ends in readOnly.
	n, m, err := NewZKRequests().Next(zkConnectRequest(0x1234, true))
	if n != 49 || err != nil || m.Cmd != "connect" || m.Text != "connect session 0x1234 timeout 4000ms" {
		t.Fatalf("n = %d, err = %v, %+v", n, err, m)
	}
}

func TestZKReplies(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want Message
	}{
		{"connected", zkConnectResponse(4000, 0x1000002a), Message{
			Control: true, Text: "connected session 0x1000002a timeout 4000ms"}},
		{"create", reply(5, 0x10, 0).str("/lock/n-0000000001").frame(), Message{Xid: 5, Text: "reply xid 5"}},
		{"getChildren2", reply(6, 0x10, 0).i32(1).str("n-0000000001").stat().frame(), Message{
			Xid: 6, Text: "reply xid 6"}},
		{"no node", reply(7, 0x10, -101).frame(), Message{Xid: 7, Err: true, Text: "reply xid 7 err -101 (NoNode)"}},
		{"node exists", reply(8, 0x10, -110).frame(), Message{Xid: 8, Err: true, Text: "reply xid 8 err -110 (NodeExists)"}},
		{"unknown error", reply(9, 0x10, -999).frame(), Message{Xid: 9, Err: true, Text: "reply xid 9 err -999"}},
		{"delete", reply(10, 0x11, 0).frame(), Message{Xid: 10, Text: "reply xid 10"}},
		{"ping", reply(-2, 0x11, 0).frame(), Message{Xid: -2, Control: true, Text: "ping reply"}},
		{"auth failed", reply(-4, 0, -115).frame(), Message{
			Xid: -4, Control: true, Err: true, Text: "auth reply err -115 (AuthFailed)"}},
		{"setWatches", reply(-8, 0x11, 0).frame(), Message{Xid: -8, Control: true, Text: "setWatches reply"}},
		{"watch event", reply(-1, -1, 0).i32(2).i32(3).str("/lock/n-0000000001").frame(), Message{
			Xid: -1, Push: true, Keys: []string{"/lock/n-0000000001"}, Text: "event NodeDeleted /lock/n-0000000001"}},
		{"session event", reply(-1, -1, 0).i32(-1).i32(3).str("").frame(), Message{
			Xid: -1, Push: true, Text: "event None SyncConnected"}},
		{"expired event", reply(-1, -1, 0).i32(-1).i32(-112).null().frame(), Message{
			Xid: -1, Push: true, Text: "event None Expired"}},
		{"long event path", reply(-1, -1, 0).i32(4).i32(3).str("/" + strings.Repeat("p", 99)).frame(), Message{
			Xid: -1, Push: true, Keys: []string{"/" + strings.Repeat("p", 99)},
			Text: "event NodeChildrenChanged /" + strings.Repeat("p", MaxText-30) + "..."}},
		{"session expired", reply(11, 0, -112).frame(), Message{
			Xid: 11, Err: true, Text: "reply xid 11 err -112 (SessionExpired)"}},
	}
	var stream []byte
	var want []Message
	for _, tt := range tests {
		stream = append(stream, tt.in...)
		want = append(want, tt.want)
	}
	got := messages(checkSplits(t, NewZKReplies, stream))
	for i := range tests {
		if i >= len(got) || !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s:\ngot  %#v\nwant %#v", tests[i].name, got[min(i, len(got)-1)], want[i])
		}
		checkMessage(t, got[i])
	}

	// A ConnectResponse without readOnly (go-zookeeper's layout), refusing the session.
	in := jute(nil).i32(0).i32(0).i64(0).str(strings.Repeat("\x00", 16)).frame()
	n, m, err := NewZKReplies().Next(in)
	want0 := Message{Control: true, Err: true, Text: "connected session 0x0 timeout 0ms (expired)"}
	if n != len(in) || err != nil || !reflect.DeepEqual(m, want0) {
		t.Fatalf("n = %d, err = %v, %+v", n, err, m)
	}
}

func TestZKGarbage(t *testing.T) {
	connected := func(f Framer) Framer {
		switch f := f.(type) {
		case *zkRequests:
			f.connected = true
		case *zkReplies:
			f.connected = true
		}
		return f
	}
	tests := []struct {
		name string
		f    Framer
		in   []byte
	}{
		{"resp to requests", NewZKRequests(), resp("SET", "k", "v")},
		{"resp to replies", NewZKReplies(), []byte("+OK\r\n")},
		{"four-letter word", NewZKRequests(), []byte("ruok")},
		{"negative length", NewZKRequests(), jute(nil).i32(-5)},
		{"over 64 MiB", connected(NewZKRequests()), jute(nil).i32(MaxZKFrame + 1)},
		{"connect too short", NewZKRequests(), jute(nil).i32(0).i64(0).frame()},
		{"connect passwd past the end", NewZKRequests(), jute(nil).i32(0).i64(0).i32(0).i64(0).i32(100).frame()},
		{"connect trailing bytes", NewZKRequests(), jute(nil).i32(0).i64(0).i32(0).i64(0).i32(0).i32(0).frame()},
		{"response passwd past the end", NewZKReplies(), jute(nil).i32(0).i32(0).i64(0).i32(17).frame()},
		{"request shorter than its header", connected(NewZKRequests()), jute(nil).i32(1).frame()},
		{"reply shorter than its header", connected(NewZKReplies()), jute(nil).i32(1).i32(2).frame()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, m, err := tt.f.Next(tt.in)
			if err == nil || n != 0 {
				t.Fatalf("n = %d, err = %v, %+v: want an error", n, err, m)
			}
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("%v does not wrap ErrProtocol", err)
			}
		})
	}
}

// A framer stays in its first state until it has returned the connect message.
func TestZKConnectStateOnlyOnSuccess(t *testing.T) {
	f := NewZKRequests()
	c := zkConnectRequest(0, false)
	if n, _, err := f.Next(c[:10]); n != 0 || err != nil {
		t.Fatalf("partial connect: n = %d, err = %v", n, err)
	}
	if n, m, err := f.Next(c); n != len(c) || err != nil || m.Cmd != "connect" {
		t.Fatalf("connect: n = %d, err = %v, %+v", n, err, m)
	}
	if n, m, err := f.Next(req(1, 3).str("/a").boolean(false).frame()); n == 0 || err != nil || m.Cmd != "exists" {
		t.Fatalf("after connect: n = %d, err = %v, %+v", n, err, m)
	}
}
