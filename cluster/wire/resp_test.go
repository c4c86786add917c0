package wire

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const sha = "e9f69f2beb755be68b5e456ee2ce9aadfbc4ebf4"

func TestRESPRequests(t *testing.T) {
	long := strings.Repeat("k", 100)
	many := []string{"DEL"}
	for i := 0; i < 20; i++ {
		many = append(many, string(rune('a'+i)))
	}
	tests := []struct {
		name string
		in   []byte
		want Message
	}{
		{"set nx px", resp("set", "lock", "tok", "NX", "PX", "500"), Message{
			Cmd: "SET", Args: []string{"lock", "tok", "NX", "PX", "500"}, Keys: []string{"lock"},
			Text: "SET lock tok NX PX 500"}},
		{"evalsha", resp("evalsha", sha, "1", "lock", "tok"), Message{
			Cmd: "EVALSHA", Args: []string{sha, "1", "lock", "tok"}, Keys: []string{"lock"},
			Text: "EVALSHA " + sha + " 1 lock tok"}},
		{"eval two keys", resp("EVAL", "return 1", "2", "k1", "k2", "a1"), Message{
			Cmd: "EVAL", Args: []string{"return 1", "2", "k1", "k2", "a1"}, Keys: []string{"k1", "k2"},
			Text: "EVAL return 1 2 k1 k2 a1"}},
		{"eval numkeys 0", resp("EVAL", "return 1", "0", "a1"), Message{
			Cmd: "EVAL", Args: []string{"return 1", "0", "a1"}, Text: "EVAL return 1 0 a1"}},
		{"eval numkeys past the end", resp("FCALL", "f", "5", "k1"), Message{
			Cmd: "FCALL", Args: []string{"f", "5", "k1"}, Keys: []string{"k1"}, Text: "FCALL f 5 k1"}},
		{"eval numkeys not a number", resp("EVALSHA_RO", sha, "x", "k1"), Message{
			Cmd: "EVALSHA_RO", Args: []string{sha, "x", "k1"}, Text: "EVALSHA_RO " + sha + " x k1"}},
		{"get", resp("GET", "lock"), Message{
			Cmd: "GET", Args: []string{"lock"}, Keys: []string{"lock"}, Text: "GET lock"}},
		{"del all keys", resp("del", "a", "b", "c"), Message{
			Cmd: "DEL", Args: []string{"a", "b", "c"}, Keys: []string{"a", "b", "c"}, Text: "DEL a b c"}},
		{"mset pairs", resp("MSET", "k1", "v1", "k2", "v2"), Message{
			Cmd: "MSET", Args: []string{"k1", "v1", "k2", "v2"}, Keys: []string{"k1", "k2"},
			Text: "MSET k1 v1 k2 v2"}},
		{"blpop", resp("BLPOP", "a", "b", "0"), Message{
			Cmd: "BLPOP", Args: []string{"a", "b", "0"}, Keys: []string{"a", "b"}, Text: "BLPOP a b 0"}},
		{"rename", resp("RENAME", "a", "b"), Message{
			Cmd: "RENAME", Args: []string{"a", "b"}, Keys: []string{"a", "b"}, Text: "RENAME a b"}},
		{"object", resp("OBJECT", "ENCODING", "k"), Message{
			Cmd: "OBJECT", Args: []string{"ENCODING", "k"}, Keys: []string{"k"}, Text: "OBJECT ENCODING k"}},
		{"ping", resp("PING"), Message{Cmd: "PING", Control: true, Text: "PING"}},
		{"hello", resp("hello", "3"), Message{Cmd: "HELLO", Args: []string{"3"}, Control: true, Text: "HELLO 3"}},
		{"client setinfo", resp("client", "setinfo", "LIB-NAME", "go-redis"), Message{
			Cmd: "CLIENT", Args: []string{"setinfo", "LIB-NAME", "go-redis"}, Control: true,
			Text: "CLIENT setinfo LIB-NAME go-redis"}},
		{"select", resp("SELECT", "0"), Message{Cmd: "SELECT", Args: []string{"0"}, Control: true, Text: "SELECT 0"}},
		{"multi keyless", resp("MULTI"), Message{Cmd: "MULTI", Text: "MULTI"}},
		{"wait keyless", resp("WAIT", "1", "100"), Message{Cmd: "WAIT", Args: []string{"1", "100"}, Text: "WAIT 1 100"}},
		{"unknown command", resp("frobnicate", "x", "y"), Message{
			Cmd: "FROBNICATE", Args: []string{"x", "y"}, Keys: []string{"x"}, Text: "FROBNICATE x y"}},
		{"long key", resp("GET", long), Message{
			Cmd: "GET", Args: []string{long[:MaxArgLen]}, Keys: []string{long},
			Text: "GET " + long[:MaxArgLen] + "..."}},
		{"many args", resp(many...), Message{
			Cmd: "DEL", Args: many[1:17], Keys: many[1:17],
			Text: "DEL a b c d e f g h i j k l m n o p..."}},
		{"binary value", resp("SET", "k", "\x00\xff"), Message{
			Cmd: "SET", Args: []string{"k", "\x00\xff"}, Keys: []string{"k"}, Text: "SET k .."}},
		{"empty array", []byte("*0\r\n"), Message{Control: true, Text: "*0"}},
		{"null array", []byte("*-1\r\n"), Message{Control: true, Text: "*-1"}},
		{"inline ping", []byte("PING\r\n"), Message{Cmd: "PING", Control: true, Text: "PING"}},
		{"inline blanks", []byte("  set\tk   v \r\n"), Message{
			Cmd: "SET", Args: []string{"k", "v"}, Keys: []string{"k"}, Text: "SET k v"}},
		{"inline bare LF", []byte("get k\n"), Message{
			Cmd: "GET", Args: []string{"k"}, Keys: []string{"k"}, Text: "GET k"}},
		{"inline empty", []byte("\r\n"), Message{Control: true, Text: "(empty)"}},
		{"inline utf-8", []byte("GET clé\r\n"), Message{
			Cmd: "GET", Args: []string{"clé"}, Keys: []string{"clé"}, Text: "GET cl.."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkSplits(t, NewRESPRequests, tt.in)
			if len(got) != 1 || got[0].n != len(tt.in) {
				t.Fatalf("got %d messages:\n%s", len(got), dump(got))
			}
			if !reflect.DeepEqual(got[0].m, tt.want) {
				t.Fatalf("got  %#v\nwant %#v", got[0].m, tt.want)
			}
			checkMessage(t, got[0].m)
		})
	}

	// All of them pipelined in one stream, cut at every byte.
	var stream []byte
	var want []Message
	for _, tt := range tests {
		stream = append(stream, tt.in...)
		want = append(want, tt.want)
	}
	if got := messages(checkSplits(t, NewRESPRequests, stream)); !reflect.DeepEqual(got, want) {
		t.Fatalf("pipelined: got %d messages, want %d:\n%+v", len(got), len(want), got)
	}
}

func TestRESPRequestsKeysShareArgs(t *testing.T) {
	_, m, _ := NewRESPRequests().Next(resp("DEL", "a", "b"))
	if &m.Keys[0] != &m.Args[0] || cap(m.Keys) != len(m.Keys) {
		t.Fatalf("Keys do not share Args' array with a capped capacity")
	}
}

func TestRESPReplies(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Message
	}{
		{"ok", "+OK\r\n", Message{Text: "+OK"}},
		{"simple", "+FULLRESYNC 1 2\r\n", Message{Text: "+FULLRESYNC 1 2"}},
		{"error", "-ERR unknown command 'foo'\r\n", Message{Err: true, Text: "-ERR unknown command 'foo'"}},
		{"noscript", "-NOSCRIPT No matching script. Please use EVAL.\r\n", Message{
			Err: true, Text: "-NOSCRIPT No matching script. Please use EVAL."}},
		{"one", ":1\r\n", Message{Text: ":1"}},
		{"zero", ":0\r\n", Message{Zero: true, Text: ":0"}},
		{"minus two", ":-2\r\n", Message{Text: ":-2"}},
		{"big int", ":1234567890123\r\n", Message{Text: ":1234567890123"}},
		{"bulk", "$3\r\ntok\r\n", Message{Text: "$3"}},
		{"bulk with CRLF inside", "$4\r\n\r\n\r\n\r\n", Message{Text: "$4"}},
		{"empty bulk", "$0\r\n\r\n", Message{Text: "$0"}},
		{"big bulk", "$1000\r\n" + strings.Repeat("x", 1000) + "\r\n", Message{Text: "$1000"}},
		{"null bulk", "$-1\r\n", Message{Null: true, Text: "(nil)"}},
		{"null array", "*-1\r\n", Message{Null: true, Text: "(nil)"}},
		{"resp3 null", "_\r\n", Message{Null: true, Text: "(nil)"}},
		{"empty array", "*0\r\n", Message{Text: "*0"}},
		{"array", "*2\r\n$3\r\nfoo\r\n:1\r\n", Message{Text: "*2"}},
		{"exec with an error inside", "*2\r\n+OK\r\n-ERR no\r\n", Message{Text: "*2"}},
		{"nested", "*3\r\n*2\r\n:1\r\n*1\r\n$-1\r\n%2\r\n+a\r\n~2\r\n#t\r\n,1.5\r\n+b\r\n_\r\n*0\r\n",
			Message{Text: "*3"}},
		{"map", "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n", Message{Text: "%2"}},
		{"set", "~3\r\n+a\r\n+b\r\n+c\r\n", Message{Text: "~3"}},
		{"double", ",3.14\r\n", Message{Text: ",3.14"}},
		{"inf", ",-inf\r\n", Message{Text: ",-inf"}},
		{"true", "#t\r\n", Message{Text: "#t"}},
		{"big number", "(3492890328409238509324850943850943825024385\r\n", Message{
			Text: "(3492890328409238509324850943850943825024385"}},
		{"blob error", "!21\r\nSYNTAX invalid syntax\r\n", Message{Err: true, Text: "!SYNTAX invalid syntax"}},
		{"verbatim", "=15\r\ntxt:Some string\r\n", Message{Text: "=15"}},
		{"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n", Message{Push: true, Text: ">3 message"}},
		{"push invalidate", ">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nlock\r\n", Message{
			Push: true, Text: ">2 invalidate"}},
		{"attribute", "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n" +
			"*2\r\n:2039123\r\n:9543892\r\n", Message{Text: "|1 *2"}},
		{"attribute before an error", "|1\r\n+a\r\n+b\r\n-ERR x\r\n", Message{Err: true, Text: "|1 -ERR x"}},
		{"attribute nested", "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n", Message{Text: "*2"}},
		{"long error", "-ERR " + strings.Repeat("e", 100) + "\r\n", Message{
			Err: true, Text: "-ERR " + strings.Repeat("e", MaxText-8) + "..."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkSplits(t, NewRESPReplies, []byte(tt.in))
			if len(got) != 1 || got[0].n != len(tt.in) {
				t.Fatalf("got %d messages:\n%s", len(got), dump(got))
			}
			if !reflect.DeepEqual(got[0].m, tt.want) {
				t.Fatalf("got  %#v\nwant %#v", got[0].m, tt.want)
			}
			checkMessage(t, got[0].m)
		})
	}
	var stream []byte
	var want []Message
	for _, tt := range tests {
		stream = append(stream, tt.in...)
		want = append(want, tt.want)
	}
	if got := messages(checkSplits(t, NewRESPReplies, stream)); !reflect.DeepEqual(got, want) {
		t.Fatalf("pipelined: got %d messages, want %d:\n%+v", len(got), len(want), got)
	}
}

func TestRESPLargeBulk(t *testing.T) {
	payload := bytes.Repeat([]byte{'x'}, 10<<20)
	bulk := cat([]byte("$10485760\r\n"), payload, []byte("\r\n"))
	for _, tt := range []struct {
		f  Framer
		in []byte
	}{
		{NewRESPReplies(), bulk},
		{NewRESPRequests(), cat([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n"), bulk)},
	} {
		for _, k := range []int{0, 1, 11, len(tt.in) - 3, len(tt.in) - 1} {
			if n, _, err := tt.f.Next(tt.in[:k]); n != 0 || err != nil {
				t.Fatalf("prefix of %d: n = %d, err = %v", k, n, err)
			}
		}
		n, m, err := tt.f.Next(tt.in)
		if n != len(tt.in) || err != nil {
			t.Fatalf("n = %d of %d, err = %v", n, len(tt.in), err)
		}
		checkMessage(t, m)
	}
}

func TestRESPGarbage(t *testing.T) {
	tests := []struct {
		name string
		f    func() Framer
		in   string
	}{
		{"tls hello to requests", NewRESPRequests, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"},
		{"zookeeper to requests", NewRESPRequests, "\x00\x00\x00\x2c\x00\x00\x00\x00"},
		{"multibulk length not a number", NewRESPRequests, "*abc\r\n"},
		{"multibulk length -2", NewRESPRequests, "*-2\r\n"},
		{"element not bulk", NewRESPRequests, "*2\r\n:1\r\n"},
		{"null bulk in a request", NewRESPRequests, "*1\r\n$-1\r\n"},
		{"bulk not followed by CRLF", NewRESPRequests, "*1\r\n$3\r\nabcX"},
		{"CR without LF", NewRESPRequests, "*1\r\x00"},
		{"inline CR without LF", NewRESPRequests, "PING\rX"},
		{"inline too long", NewRESPRequests, strings.Repeat("a", MaxLine+2)},
		{"length too long", NewRESPRequests, "*1234567890123456789012\r\n"},
		{"unknown type", NewRESPReplies, "?x\r\n"},
		{"zookeeper to replies", NewRESPReplies, "\x00\x00\x00\x24\x00\x00\x00\x00"},
		{"bulk length -2", NewRESPReplies, "$-2\r\n"},
		{"bulk length not a number", NewRESPReplies, "$abc\r\n"},
		{"streamed string", NewRESPReplies, "$?\r\n;4\r\nHell\r\n;0\r\n"},
		{"empty length", NewRESPReplies, "*\r\n"},
		{"LF without CR", NewRESPReplies, "+OK\n"},
		{"bulk too long for its length", NewRESPReplies, "$3\r\nabcd\r\n"},
		{"unknown type nested", NewRESPReplies, "*2\r\n:1\r\n?x\r\n"},
		{"integer not a number", NewRESPReplies, ":abc\r\n"},
		{"bad boolean", NewRESPReplies, "#x\r\n"},
		{"null with content", NewRESPReplies, "_x\r\n"},
		{"null attribute", NewRESPReplies, "|-1\r\n"},
		{"verbatim without format", NewRESPReplies, "=3\r\nabc\r\n"},
		{"line too long", NewRESPReplies, "+" + strings.Repeat("a", MaxLine+2)},
		{"length line too long", NewRESPReplies, "$" + strings.Repeat("1", 100)},
		{"bulk over 512 MiB", NewRESPReplies, "$536870913\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, m, err := tt.f().Next([]byte(tt.in))
			if err == nil || n != 0 {
				t.Fatalf("n = %d, err = %v, %+v: want an error", n, err, m)
			}
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("%v does not wrap ErrProtocol", err)
			}
		})
	}
}

// TestRefused: a reply refuses its request when it is an error, or a null or :0 that is not a
// script's (a script's nil can be its success).
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		req, reply string
		want       bool
	}{
		{"*5\r\n$3\r\nSET\r\n$4\r\nlock\r\n$1\r\nt\r\n$2\r\nNX\r\n$2\r\nPX\r\n", "+OK\r\n", false},
		{"*5\r\n$3\r\nSET\r\n$4\r\nlock\r\n$1\r\nt\r\n$2\r\nNX\r\n$2\r\nPX\r\n", "$-1\r\n", true},
		{"*3\r\n$5\r\nSETNX\r\n$4\r\nlock\r\n$1\r\nt\r\n", ":0\r\n", true},
		{"*3\r\n$5\r\nSETNX\r\n$4\r\nlock\r\n$1\r\nt\r\n", ":1\r\n", false},
		{"*3\r\n$3\r\nSET\r\n$4\r\nlock\r\n$1\r\nt\r\n", "-READONLY You can't write against a read only replica.\r\n", true},
		{"*3\r\n$4\r\nEVAL\r\n$6\r\nreturn\r\n$1\r\n1\r\n", "$-1\r\n", false},
		{"*3\r\n$4\r\nEVAL\r\n$6\r\nreturn\r\n$1\r\n1\r\n", ":0\r\n", false},
		{"*3\r\n$4\r\nEVAL\r\n$6\r\nreturn\r\n$1\r\n1\r\n", "-ERR script\r\n", true},
		{"*2\r\n$3\r\nGET\r\n$4\r\nlock\r\n", "$1\r\nt\r\n", false},
	} {
		_, req, err := NewRESPRequests().Next([]byte(tc.req))
		if err != nil {
			t.Fatal(err)
		}
		_, reply, err := NewRESPReplies().Next([]byte(tc.reply))
		if err != nil {
			t.Fatal(err)
		}
		if got := Refused(req, reply); got != tc.want {
			t.Errorf("Refused(%s, %s) = %v, want %v", req.Text, reply.Text, got, tc.want)
		}
	}
}
