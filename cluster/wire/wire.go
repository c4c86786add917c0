// Package wire cuts the byte streams of a proxied connection into protocol messages.
//
// A TCP proxy that injects faults into one kind of message (drop every SET NX, delay the
// replies to EVALSHA, cut the link after a ZooKeeper create) must know where each message
// starts and ends in the bytes it relays, and what it is. This package provides that for the
// two protocols lockchaos proxies:
//
//   - Redis RESP, versions 2 and 3 (https://redis.io/docs/latest/develop/reference/protocol-spec/):
//     NewRESPRequests for the client → server direction, NewRESPReplies for server → client.
//   - ZooKeeper's client protocol, jute records behind a 4-byte length prefix
//     (zookeeper-jute/src/main/resources/zookeeper.jute in the ZooKeeper sources; the same
//     layouts are in github.com/go-zookeeper/zk structs.go and conn.go): NewZKRequests and
//     NewZKReplies.
//
// The framers are pure and incremental: they do no I/O, start no goroutines and depend on
// nothing beyond the standard library. A caller appends what it reads to a buffer and calls
// Next on the buffer after each read; Next returns the length of the first complete message
// (0 while the message is still partial), so the caller forwards b[:n], drops it from its
// buffer and calls Next again (several pipelined messages may sit in one read), or keeps the
// partial message until more bytes arrive. A partial message is scanned again from its start
// on every call: a bulk string's payload is skipped in constant time, so this costs
// O(headers) of the partial message, never O(payload).
//
// A message that declares a large length (a 100 MB bulk string, a ZooKeeper frame of 60 MiB)
// is partial until all of it has arrived: a caller that bounds its buffer must pass the stream
// through unparsed when the bound is reached.
//
// An error from Next means the bytes are not this protocol (or not a version of it that this
// package knows); the caller then stops parsing that stream and relays it unchanged. Every
// such error wraps ErrProtocol.
//
// A Framer serves one direction of one connection, and is not safe for concurrent use: the
// ZooKeeper framers remember whether they have seen the connect message yet. The RESP framers
// are stateless, but a caller should not rely on it.
package wire

import (
	"errors"
	"fmt"
)

// Message is one protocol message on one direction of a link.
//
// Its strings are copies: they do not alias the buffer given to Next, which the caller may
// reuse at once.
type Message struct {
	// Cmd is the request's command: for RESP the command upper-cased ("SET", "EVALSHA",
	// "GET"); for ZooKeeper the opcode's name as ZooKeeper's ZooDefs.OpCode spells it
	// ("create", "delete", "getChildren2", "closeSession", ...), "connect" for the session's
	// first message and "op<N>" for an unknown opcode N. Cmd is empty on every reply, and on
	// an empty RESP request (an empty inline line, or a "*0" array that redis-server skips).
	Cmd string
	// Args holds a RESP request's arguments after the command, as given: at most MaxArgs of
	// them, each cut to at most MaxArgLen bytes. It is nil for ZooKeeper and for replies.
	Args []string
	// Keys holds the keys a RESP request touches (see NewRESPRequests), or the path of a
	// ZooKeeper request or watch event that has one: at most MaxArgs keys, each cut to at
	// most MaxKeyLen bytes. Keys may share its backing array with Args: do not append to it.
	Keys []string
	// Xid is a ZooKeeper request's or reply's xid (0 for the connect messages, -1 for a watch
	// event, -2 for pings, -4 for auth, -8 for setWatches). It is 0 for RESP.
	Xid int32

	// Err reports an error reply: RESP '-' (simple error) or '!' (blob error) at the top
	// level (not an error nested in an array, such as one of EXEC's replies); a ZooKeeper
	// reply whose header has err != 0, or a ConnectResponse that refuses the session
	// (sessionId 0 or timeOut <= 0: the session expired).
	Err bool
	// Null reports a RESP null reply: RESP2 null bulk string ($-1) or null array (*-1), or
	// RESP3 null (_). A -1 length on another aggregate or blob type is a null too.
	Null bool
	// Zero reports the RESP integer reply 0 (":0"), which is how DEL, PEXPIRE and most lock
	// scripts say "not done".
	Zero bool
	// Push reports a message that answers no request: a RESP3 push ('>') or a ZooKeeper
	// watch event (xid -1).
	Push bool

	// Control reports connection housekeeping rather than a lock's command. RESP requests:
	// HELLO, AUTH, CLIENT, SELECT, PING, QUIT, RESET, READONLY, READWRITE, COMMAND, ECHO,
	// and empty requests. ZooKeeper requests: connect, ping (opcode 11 or xid -2), auth
	// (opcode 100 or xid -4), sasl (102), setWatches and setWatches2 (101, 105 or xid -8);
	// ZooKeeper replies: the ConnectResponse and the replies with xid -2, -4 and -8. A RESP
	// reply is never Control: the replies framer does not know which request it answers.
	Control bool
	// Text is a short printable summary for logs and reports, at most MaxText bytes of
	// printable ASCII (other bytes show as '.', a cut summary ends in "..."): for example
	// `SET lock tok NX PX 500`, `+OK`, `:1`, `$3`, `(nil)`, `-ERR ...`,
	// `create /lock/n- (xid 5)`, `reply xid 5 err -101 (NoNode)`.
	Text string
}

// Framer cuts one direction of one connection into messages. A Framer may keep state (a
// ZooKeeper stream starts with a connect message that has no request header), so each
// direction of each connection needs its own, made fresh when the connection opens.
type Framer interface {
	// Next returns the length of the first complete message at the start of b and that
	// message. n == 0 and a nil error mean that b holds no complete message yet (the caller
	// keeps b and calls again when more bytes have arrived). An error, which wraps
	// ErrProtocol, means that b is not this protocol: the caller stops parsing this stream
	// and passes its bytes through unparsed. n never exceeds len(b), and n is exactly the
	// message's length in bytes, every CRLF or length prefix included.
	Next(b []byte) (n int, m Message, err error)
}

// Bounds on what a Message keeps, and on what the framers accept.
const (
	// MaxArgs is the most arguments a RESP request's Message keeps in Args, and the most
	// keys any Message keeps in Keys.
	MaxArgs = 16
	// MaxArgLen is the most bytes kept of one argument in Args.
	MaxArgLen = 64
	// MaxKeyLen is the most bytes kept of one key (or ZooKeeper path) in Keys.
	MaxKeyLen = 1024
	// MaxText is the most bytes of Message.Text.
	MaxText = 80
	// MaxLine is the longest RESP line (a length header, a simple string, an inline
	// command) without its CRLF; a longer one is an error. redis-server refuses inline
	// requests over 64 KiB too (PROTO_INLINE_MAX_SIZE in server.h).
	MaxLine = 64 << 10
	// MaxBulk is the longest RESP bulk string a framer accepts: 512 MiB, redis-server's
	// default proto-max-bulk-len and the largest string value Redis stores.
	MaxBulk = 512 << 20
	// MaxZKFrame is the largest ZooKeeper frame a framer accepts: 64 MiB. ZooKeeper's own
	// default limit (jute.maxbuffer) is just under 1 MiB.
	MaxZKFrame = 64 << 20
)

// ErrProtocol is wrapped by every error a Framer returns: the stream is not the framer's
// protocol.
var ErrProtocol = errors.New("not the expected protocol")

// protoError says where and why a stream is not the expected protocol.
type protoError struct {
	proto string // "resp" or "zookeeper"
	at    int    // offset in the buffer given to Next
	why   string
}

func (e *protoError) Error() string {
	return fmt.Sprintf("wire: %s: %s (byte %d): %v", e.proto, e.why, e.at, ErrProtocol)
}

func (e *protoError) Unwrap() error { return ErrProtocol }

// more is returned as a position by the parsing helpers when b ends before the item does.
const more = -1

// printable reports whether every byte of s is printable ASCII.
func printable[T ~string | ~[]byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// summary returns s as a Text: itself when it is short and printable, else a copy cut to
// MaxText bytes (ending in "...") with its unprintable bytes shown as '.'. cut says that s is
// already a cut of something longer, so it must end in "..." too.
func summary[T ~string | ~[]byte](s T, cut bool) string {
	if !cut && len(s) <= MaxText && printable(s) {
		return string(s)
	}
	var buf [MaxText]byte
	n := len(s)
	if cut || n > MaxText {
		n = min(n, MaxText-3)
	}
	for i := 0; i < n; i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		buf[i] = c
	}
	if n < len(s) || cut {
		n += copy(buf[n:], "...")
	}
	return string(buf[:n])
}
