package wire

import (
	"strconv"
	"testing"
)

// The benchmarks frame a stream of what a redsync-style lock client and its server say (SET
// NX PX to lock, EVALSHA to unlock and to extend, GET, and their replies), as the toxic does:
// Next on the rest of the buffer until it is used up. ns/msg is the cost per message; the
// proxy hop it must stay far below is tens of microseconds on loopback.

const token = "dGhpcyBpcyBhIHRva2Vu" // a base64 token, as redsync makes them

func lockRequests() []byte {
	var b []byte
	for i := 0; i < 64; i++ {
		key := "lockchaos:mutex:" + strconv.Itoa(i)
		b = append(b, resp("set", key, token, "px", "8000", "nx")...)
		b = append(b, resp("evalsha", sha, "1", key, token, "8000")...) // extend
		b = append(b, resp("get", key)...)
		b = append(b, resp("evalsha", sha, "1", key, token)...) // unlock
	}
	return b
}

func lockReplies() []byte {
	var b []byte
	for i := 0; i < 64; i++ {
		b = append(b, "+OK\r\n"...)
		b = append(b, ":1\r\n"...)
		b = append(b, "$"+strconv.Itoa(len(token))+"\r\n"+token+"\r\n"...)
		b = append(b, ":1\r\n"...)
		b = append(b, "_\r\n"...)  // a failed SET NX (RESP3)
		b = append(b, ":0\r\n"...) // a failed unlock
	}
	return b
}

func benchFramer(b *testing.B, newFramer func() Framer, stream []byte) {
	msgs := len(frameAll(b, newFramer(), stream))
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		f := newFramer()
		for rest := stream; len(rest) > 0; {
			n, _, err := f.Next(rest)
			if err != nil || n == 0 {
				b.Fatalf("n = %d, err = %v", n, err)
			}
			rest = rest[n:]
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*msgs), "ns/msg")
}

func BenchmarkRESPRequests(b *testing.B) { benchFramer(b, NewRESPRequests, lockRequests()) }

func BenchmarkRESPReplies(b *testing.B) { benchFramer(b, NewRESPReplies, lockReplies()) }

func BenchmarkZKRequests(b *testing.B) {
	stream := zkConnectRequest(0, false)
	for i := int32(1); i <= 64; i++ {
		stream = cat(stream,
			req(i, 1).str("/lockchaos/locks/mutex/_c_0123-lock-").str("").i32(1).i32(31).str("world").str("anyone").i32(3).frame(),
			req(i, 12).str("/lockchaos/locks/mutex").boolean(false).frame(),
			req(-2, 11).frame(),
			req(i, 2).str("/lockchaos/locks/mutex/_c_0123-lock-0000000001").i32(-1).frame())
	}
	benchFramer(b, NewZKRequests, stream)
}

func BenchmarkZKReplies(b *testing.B) {
	stream := zkConnectResponse(4000, 0x1000002a)
	for i := int32(1); i <= 64; i++ {
		stream = cat(stream,
			reply(i, 9, 0).str("/lockchaos/locks/mutex/_c_0123-lock-0000000001").frame(),
			reply(i, 9, 0).i32(1).str("_c_0123-lock-0000000001").stat().frame(),
			reply(-2, 9, 0).frame(),
			reply(-1, -1, 0).i32(2).i32(3).str("/lockchaos/locks/mutex/_c_0123-lock-0000000000").frame(),
			reply(i, 9, -101).frame())
	}
	benchFramer(b, NewZKReplies, stream)
}
