package wire

import (
	"strings"
	"testing"
)

func TestPattern(t *testing.T) {
	reqMsg := func(in []byte) Message {
		_, m, err := NewRESPRequests().Next(in)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	zkMsg := func(op int32, path string) Message {
		f := &zkRequests{connected: true}
		_, m, err := f.Next(req(3, op).str(path).boolean(false).frame())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	setNX := reqMsg(resp("set", "lock", "tok", "nx", "px", "500"))
	setPXNX := reqMsg(resp("SET", "lock", "tok", "PX", "500", "NX"))
	setXX := reqMsg(resp("SET", "lock", "tok", "XX"))
	setKeyNX := reqMsg(resp("SET", "NX", "tok")) // the key is "NX": not a flag
	evalsha := reqMsg(resp("EVALSHA", sha, "1", "lock", "tok"))
	ping := reqMsg(resp("PING"))
	inlinePing := reqMsg([]byte("ping\r\n"))
	create := zkMsg(1, "/lock/n-")
	create2 := zkMsg(15, "/lock/n-")
	getChildren := zkMsg(8, "/lock")
	_, zkPing, _ := (&zkRequests{connected: true}).Next(req(-2, 11).frame())
	_, connect, _ := NewZKRequests().Next(zkConnectRequest(0, false))
	_, okReply, _ := NewRESPReplies().Next([]byte("+OK\r\n"))
	_, push, _ := NewRESPReplies().Next([]byte(">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n"))
	_, event, _ := (&zkReplies{connected: true}).Next(reply(-1, -1, 0).i32(2).i32(3).str("/lock").frame())

	tests := []struct {
		pattern string
		match   []Message
		nomatch []Message
	}{
		{"SET NX", []Message{setNX, setPXNX}, []Message{setXX, setKeyNX, evalsha, ping}},
		{"set   nx ", []Message{setNX, setPXNX}, []Message{setXX}},
		{"SET NX PX", []Message{setNX, setPXNX}, []Message{setXX}},
		{"SET", []Message{setNX, setPXNX, setXX, setKeyNX}, []Message{evalsha}},
		{"EVALSHA", []Message{evalsha}, []Message{setNX, ping}},
		{"PING", []Message{ping, inlinePing, zkPing}, []Message{setNX}},
		{"*", []Message{setNX, evalsha, create, getChildren}, []Message{
			ping, inlinePing, zkPing, connect, okReply, push, event}},
		{"* NX", []Message{setNX}, []Message{setXX, create}},
		{"create", []Message{create}, []Message{create2, getChildren, setNX}},
		{"CREATE", []Message{create}, []Message{create2}},
		{"getchildren", []Message{getChildren}, []Message{create}},
		{"create2", []Message{create2}, []Message{create}},
		{"create EPHEMERAL", nil, []Message{create}},
		{"ping", []Message{ping, zkPing}, nil},
		{"connect", []Message{connect}, []Message{okReply}},
	}
	for _, tt := range tests {
		p, err := ParsePattern(tt.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		for _, m := range tt.match {
			if !p.Match(m) {
				t.Errorf("%q does not match %q", p, m.Text)
			}
		}
		for _, m := range tt.nomatch {
			if p.Match(m) {
				t.Errorf("%q matches %q", p, m.Text)
			}
		}
	}
	var zero Pattern
	for _, m := range []Message{setNX, ping, create, okReply} {
		if zero.Match(m) {
			t.Errorf("the zero Pattern matches %q", m.Text)
		}
	}
}

func TestParsePattern(t *testing.T) {
	for _, s := range []string{"", "   ", "\t\n"} {
		if _, err := ParsePattern(s); err == nil || !strings.Contains(err.Error(), "empty command") {
			t.Errorf("ParsePattern(%q): err = %v, want one naming the empty command", s, err)
		}
	}
	for in, want := range map[string]string{
		"SET NX": "SET NX", " set  nx\tpx ": "set NX PX", "getChildren": "getChildren", "*": "*",
	} {
		p, err := ParsePattern(in)
		if err != nil || p.String() != want {
			t.Errorf("ParsePattern(%q) = %q, %v; want %q", in, p, err, want)
		}
	}
	if s := (Pattern{}).String(); s != "" {
		t.Errorf("zero Pattern's String = %q", s)
	}
}
