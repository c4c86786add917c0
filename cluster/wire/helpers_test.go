package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"testing"
)

// resp encodes a request the way every client library does: an array of bulk strings.
func resp(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// framed is one message and its length, as a Framer returned them.
type framed struct {
	n int
	m Message
}

// frameAll cuts the whole stream with a fresh framer; the stream must be nothing but whole
// messages.
func frameAll(t testing.TB, f Framer, b []byte) []framed {
	t.Helper()
	var out []framed
	for len(b) > 0 {
		n, m, err := f.Next(b)
		if err != nil {
			t.Fatalf("message %d: %v (at %q)", len(out), err, trunc(b))
		}
		if n == 0 {
			t.Fatalf("message %d: incomplete with %d bytes left: %q", len(out), len(b), trunc(b))
		}
		out = append(out, framed{n, m})
		b = b[n:]
	}
	return out
}

// proxy feeds the stream to a fresh framer the way the toxic does: chunk bytes at a time,
// calling Next on its buffer after each chunk until it holds no complete message.
func proxy(t testing.TB, f Framer, b []byte, chunk int) []framed {
	t.Helper()
	var out []framed
	var buf []byte
	for len(b) > 0 {
		c := min(chunk, len(b))
		buf, b = append(buf, b[:c]...), b[c:]
		for {
			n, m, err := f.Next(buf)
			if err != nil {
				t.Fatalf("chunk %d: message %d: %v", chunk, len(out), err)
			}
			if n < 0 || n > len(buf) {
				t.Fatalf("chunk %d: n = %d with %d bytes buffered", chunk, n, len(buf))
			}
			if n == 0 {
				break
			}
			out = append(out, framed{n, m})
			buf = buf[n:]
		}
	}
	if len(buf) > 0 {
		t.Fatalf("chunk %d: %d bytes left over", chunk, len(buf))
	}
	return out
}

// checkSplits cuts the stream whole and then split at every byte boundary (chunks of 1) and
// in chunks of a few other sizes: every cut must give the same messages of the same lengths.
// It returns the messages.
func checkSplits(t *testing.T, newFramer func() Framer, b []byte) []framed {
	t.Helper()
	want := frameAll(t, newFramer(), b)
	for _, chunk := range []int{1, 2, 3, 5, 7, 16, 100} {
		got := proxy(t, newFramer(), b, chunk)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("chunks of %d: got\n%s\nwant\n%s", chunk, dump(got), dump(want))
		}
	}
	// Every prefix of every message is incomplete, not an error.
	f := newFramer()
	rest := b
	for _, w := range want {
		for k := 0; k < w.n; k++ {
			c := cloneFramer(f)
			if n, _, err := c.Next(rest[:k]); n != 0 || err != nil {
				t.Fatalf("%q: prefix of %d of %d bytes: n = %d, err = %v", w.m.Text, k, w.n, n, err)
			}
		}
		if n, _, err := f.Next(rest); n != w.n || err != nil {
			t.Fatalf("%q: n = %d, err = %v", w.m.Text, n, err)
		}
		rest = rest[w.n:]
	}
	return want
}

// cloneFramer returns a framer in the same state as f.
func cloneFramer(f Framer) Framer {
	switch v := f.(type) {
	case *zkRequests:
		c := *v
		return &c
	case *zkReplies:
		c := *v
		return &c
	}
	return f
}

func messages(fs []framed) []Message {
	out := make([]Message, len(fs))
	for i, f := range fs {
		out[i] = f.m
	}
	return out
}

func dump(fs []framed) string {
	var b bytes.Buffer
	for _, f := range fs {
		fmt.Fprintf(&b, "  %d %+v\n", f.n, f.m)
	}
	return b.String()
}

func trunc(b []byte) []byte {
	if len(b) > 60 {
		return b[:60]
	}
	return b
}

// checkMessage checks the bounds every Message keeps.
func checkMessage(t testing.TB, m Message) {
	t.Helper()
	if len(m.Text) > MaxText || !printable(m.Text) {
		t.Fatalf("Text %q: over %d bytes or unprintable", m.Text, MaxText)
	}
	if len(m.Args) > MaxArgs || len(m.Keys) > MaxArgs {
		t.Fatalf("%d args, %d keys", len(m.Args), len(m.Keys))
	}
	for _, a := range m.Args {
		if len(a) > MaxArgLen {
			t.Fatalf("arg of %d bytes", len(a))
		}
	}
	for _, k := range m.Keys {
		if len(k) > MaxKeyLen {
			t.Fatalf("key of %d bytes", len(k))
		}
	}
	// A reply after a RESP3 attribute is summarised after the attribute's "|N " (replyMessage).
	if text := attributed.ReplaceAllString(m.Text, ""); m.Zero && text != ":0" {
		t.Fatalf("Zero with Text %q", m.Text)
	}
}

// attributed matches the prefix an attribute puts before a reply's summary.
var attributed = regexp.MustCompile(`^\|[0-9]+ `)

// checkStream is the fuzz property: Next never panics, never returns n > len(b) or an error
// with n > 0; a message of n bytes is incomplete at n-1 bytes (from the same state) and the
// same at exactly n bytes; every message keeps its bounds.
func checkStream(t *testing.T, f Framer, b []byte) {
	for len(b) > 0 {
		before := cloneFramer(f)
		n, m, err := f.Next(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with n = %d", err, n)
			}
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not wrap ErrProtocol", err)
			}
			return
		}
		if n < 0 || n > len(b) {
			t.Fatalf("n = %d with %d bytes", n, len(b))
		}
		if n == 0 {
			return
		}
		checkMessage(t, m)
		if n2, _, err := cloneFramer(before).Next(b[:n-1]); n2 != 0 || err != nil {
			t.Fatalf("%q: %d of its %d bytes: n = %d, err = %v", m.Text, n-1, n, n2, err)
		}
		if n2, m2, err := cloneFramer(before).Next(b[:n]); n2 != n || err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("%q: alone: n = %d, err = %v, %+v", m.Text, n2, err, m2)
		}
		b = b[n:]
	}
}
