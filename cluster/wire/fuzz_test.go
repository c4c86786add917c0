package wire

import (
	"strings"
	"testing"
)

// Each fuzz target feeds arbitrary bytes to a fresh framer, message after message, and checks
// checkStream's property: no panic, 0 <= n <= len(b), no n with an error, every message
// incomplete one byte short of its length and the same alone, and within its bounds.

func FuzzRESPRequests(f *testing.F) {
	for _, s := range [][]byte{
		resp("SET", "lock", "tok", "NX", "PX", "500"),
		resp("EVALSHA", sha, "1", "lock", "tok"),
		cat(resp("MSET", "a", "1", "b", "2"), resp("DEL", "a", "b"), []byte("PING\r\n")),
		resp("EVAL", "return 1", "3", "a"),
		[]byte("*2\r\n$3\r\nGET\r\n$-1\r\n"),
		[]byte(" get  k \n\r\n"),
		[]byte("*0\r\n*-1\r\n"),
		resp(strings.Fields("DEL" + strings.Repeat(" k", 40))...),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkStream(t, NewRESPRequests(), b) })
}

func FuzzRESPReplies(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n:1\r\n:0\r\n$3\r\ntok\r\n$-1\r\n*-1\r\n_\r\n",
		"-NOSCRIPT No matching script.\r\n!5\r\nERR x\r\n",
		"*3\r\n*2\r\n:1\r\n*1\r\n$-1\r\n%2\r\n+a\r\n~2\r\n#t\r\n,1.5\r\n+b\r\n_\r\n*0\r\n",
		"|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:1\r\n:2\r\n",
		">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n=15\r\ntxt:Some string\r\n(12345\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkStream(t, NewRESPReplies(), b) })
}

func FuzzZKRequests(f *testing.F) {
	f.Add(cat(zkConnectRequest(0, false),
		req(1, 1).str("/lock/n-").str("tok").i32(1).i32(31).str("world").str("anyone").i32(3).frame(),
		req(2, 12).str("/lock").boolean(false).frame(),
		req(-2, 11).frame(),
		req(-4, 100).i32(0).str("digest").str("u:p").frame(),
		req(3, 2).str("/lock/n-0000000001").i32(-1).frame()))
	f.Add(cat(zkConnectRequest(7, true), req(4, 999).frame(), req(5, 4).null().frame()))
	f.Fuzz(func(t *testing.T, b []byte) { checkStream(t, NewZKRequests(), b) })
}

func FuzzZKReplies(f *testing.F) {
	f.Add(cat(zkConnectResponse(4000, 0x1234),
		reply(1, 2, 0).str("/lock/n-0000000001").frame(),
		reply(2, 2, 0).i32(1).str("n-0000000001").stat().frame(),
		reply(-1, -1, 0).i32(2).i32(3).str("/lock/n-0000000001").frame(),
		reply(-2, 2, 0).frame(),
		reply(3, 2, -101).frame()))
	f.Add(cat(zkConnectResponse(0, 0), reply(-1, -1, 0).i32(-1).i32(-112).null().frame()))
	f.Fuzz(func(t *testing.T, b []byte) { checkStream(t, NewZKReplies(), b) })
}
