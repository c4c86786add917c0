package wire

import (
	"bytes"
	"strconv"
	"strings"
)

// RESP facts relied on here, from the protocol specification
// (https://redis.io/docs/latest/develop/reference/protocol-spec/) and redis-server's reader
// (processMultibulkBuffer and processInlineBuffer in networking.c):
//
//   - Every value starts with one type byte and every line ends in CRLF.
//   - Line types (the value is the rest of the line): '+' simple string, '-' simple error,
//     ':' integer, '_' null (RESP3, empty line), ',' double, '#' boolean ("t" or "f"),
//     '(' big number.
//   - Blob types (a decimal length line, that many bytes, CRLF): '$' bulk string, '!' blob
//     error, '=' verbatim string ("txt:" or "mkd:" then the text). A length of -1 is the
//     RESP2 null ("$-1\r\n", no payload).
//   - Aggregates (a decimal count line, then that many values, which nest): '*' array,
//     '~' set, '>' push, '%' map and '|' attribute (count pairs, so 2×count values).
//     "*-1" is the RESP2 null array. An attribute is not a reply: it precedes the reply it
//     describes, so the framer returns both as one message.
//   - RESP3's streamed strings and aggregates ("$?", "*?") are not sent by redis-server and
//     are refused here.
//   - A client sends each request as an array of bulk strings ("*3\r\n$3\r\nSET\r\n..."),
//     or, when the first byte is not '*', as an inline command: one line, arguments split on
//     blanks (redis-server accepts a bare LF as the line end too). redis-server skips an
//     array of count <= 0 and an empty inline line without replying.

// NewRESPRequests returns a Framer for the client → server direction of a Redis connection.
//
// Each Message has Cmd (upper-cased), Args and Keys. Keys are found by command: the first
// argument for single-key commands (GET, SET, SETNX, GETSET, PEXPIRE, PTTL, INCR, ...) and for
// every command the framer does not know; every argument for DEL, UNLINK, EXISTS, TOUCH,
// WATCH, MGET and the set-algebra commands; the numkeys keys for EVAL, EVALSHA, EVAL_RO,
// EVALSHA_RO, FCALL and FCALL_RO ("script numkeys key... arg..."); every other argument for
// MSET and MSETNX; all but the last for BLPOP, BRPOP, BZPOPMIN and BZPOPMAX; the first two for
// RENAME, COPY, SMOVE, LMOVE and the like; the second for OBJECT and MEMORY; none for keyless
// commands (PING, HELLO, AUTH, CLIENT, SELECT, INFO, WAIT, SCRIPT, FUNCTION, CONFIG, DBSIZE,
// FLUSHALL, TIME, MULTI, EXEC, DISCARD, QUIT, COMMAND, ECHO, READONLY, READWRITE, the
// SUBSCRIBE family, PUBLISH, ...).
//
// Inline commands are split on spaces and tabs; quotes are not interpreted. A line with a
// control byte other than tab (a NUL, a lone CR, an escape) is an error, which is how a
// binary stream is told from an inline command.
func NewRESPRequests() Framer { return respRequests{} }

// NewRESPReplies returns a Framer for the server → client direction of a Redis connection,
// RESP2 or RESP3.
//
// Each Message is one whole reply (an aggregate with everything nested in it, an attribute
// with the reply it precedes) or one push. Its Text is the reply's type and length for
// strings and aggregates (`$3`, `*2`, `%7`, `>3 message`), the whole line for line types
// (`+OK`, `:1`, `-ERR unknown command`) and `(nil)` for nulls; a reply preceded by an
// attribute has Text `|N ` and then the reply's.
//
// Simple strings and errors are held to MaxLine like length lines.
func NewRESPReplies() Framer { return respReplies{} }

type respRequests struct{}

type respReplies struct{}

// Next implements Framer.
func (respRequests) Next(b []byte) (int, Message, error) {
	if len(b) == 0 {
		return 0, Message{}, nil
	}
	if b[0] == '*' {
		return nextMultibulk(b)
	}
	return nextInline(b)
}

// span is where one element of a request is in the buffer.
type span struct{ off, len int }

// maxSpans is how many elements of a request are remembered: the command and enough
// arguments to find MaxArgs keys of any keySpec (MSET's are every other argument).
const maxSpans = 2*MaxArgs + 1

// reqScan is a request's elements as found in the buffer.
type reqScan struct {
	spans [maxSpans]span
	n     int // elements in the request, which may be more than maxSpans
}

func (sc *reqScan) add(off, n int) {
	if sc.n < maxSpans {
		sc.spans[sc.n] = span{off, n}
	}
	sc.n++
}

func respErr(at int, why string) error { return &protoError{proto: "resp", at: at, why: why} }

// nextMultibulk frames a request sent as an array of bulk strings.
func nextMultibulk(b []byte) (int, Message, error) {
	count, i, err := respLen(b, 1)
	if err != nil || i == more {
		return 0, Message{}, err
	}
	if count > 1<<31-1 { // redis-server: "invalid multibulk length"
		return 0, Message{}, respErr(1, "request array too long")
	}
	if count <= 0 { // skipped by redis-server: no command, no reply
		return i, Message{Control: true, Text: summary(b[:i-2], false)}, nil
	}
	var sc reqScan
	for k := int64(0); k < count; k++ {
		if i >= len(b) {
			return 0, Message{}, nil
		}
		if b[i] != '$' { // redis-server: "expected '$', got ..."
			return 0, Message{}, respErr(i, "request element is not a bulk string")
		}
		l, j, err := respLen(b, i+1)
		if err != nil || j == more {
			return 0, Message{}, err
		}
		if l < 0 || l > MaxBulk { // redis-server: "invalid bulk length"
			return 0, Message{}, respErr(i+1, "invalid bulk length in a request")
		}
		end := j + int(l)
		if err := respCRLF(b, end); err != nil || end+2 > len(b) {
			return 0, Message{}, err
		}
		sc.add(j, int(l))
		i = end + 2
	}
	return i, sc.message(b), nil
}

// nextInline frames an inline command: one line of blank-separated words.
func nextInline(b []byte) (int, Message, error) {
	var sc reqScan
	field := -1 // start of the word being read, or -1 between words
	lim := min(len(b), MaxLine+2)
	for i := 0; i < lim; i++ {
		c := b[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			if c == '\r' && i+1 < len(b) && b[i+1] != '\n' {
				return 0, Message{}, respErr(i, "CR without LF in an inline command")
			}
			if field >= 0 {
				sc.add(field, i-field)
				field = -1
			}
			if c != '\n' {
				continue
			}
			if sc.n == 0 { // redis-server skips an empty line
				return i + 1, Message{Control: true, Text: "(empty)"}, nil
			}
			return i + 1, sc.message(b), nil
		case c < 0x20 || c == 0x7f:
			return 0, Message{}, respErr(i, "control byte in an inline command")
		default:
			if field < 0 {
				field = i
			}
		}
	}
	if lim == MaxLine+2 { // redis-server: "too big inline request"
		return 0, Message{}, respErr(0, "inline command longer than 64 KiB")
	}
	return 0, Message{}, nil
}

// message builds the Message of a complete request.
//
// One string holds the upper-cased command and the kept arguments, blank-separated ("SET
// lock tok NX PX 500"): Cmd (for an unknown command), every Args element, and Text when the
// request is short and printable, are slices of it. Keys is a slice of Args when the keys
// are whole arguments one after another. So a typical request costs two allocations.
func (sc *reqScan) message(b []byte) Message {
	cmd := sc.spans[0]
	nargs := sc.n - 1
	kept := min(nargs, MaxArgs)

	info, known := cmdInfo{keys: keysFirst}, false
	if cmd.len <= maxCmdName {
		var up [32]byte
		u := up[:cmd.len]
		for i := range u {
			u[i] = upper(b[cmd.off+i])
		}
		if ci, ok := commands[string(u)]; ok {
			info, known = ci, true
		}
	}

	cmdLen := len(info.name)
	if !known {
		cmdLen = min(cmd.len, MaxArgLen)
	}
	cut := kept < nargs || cmdLen < cmd.len
	size := cmdLen
	for k := 1; k <= kept; k++ {
		l := sc.spans[k].len
		if l > MaxArgLen {
			l, cut = MaxArgLen, true
		}
		size += 1 + l
	}
	var sb strings.Builder
	sb.Grow(size)
	if known {
		sb.WriteString(info.name)
	} else {
		for _, c := range b[cmd.off : cmd.off+cmdLen] {
			sb.WriteByte(upper(c))
		}
	}
	for k := 1; k <= kept; k++ {
		sp := sc.spans[k]
		sb.WriteByte(' ')
		sb.Write(b[sp.off : sp.off+min(sp.len, MaxArgLen)])
	}
	s := sb.String()

	m := Message{Cmd: info.name, Control: info.control}
	if !known {
		m.Cmd = s[:cmdLen]
	}
	if kept > 0 {
		m.Args = make([]string, kept)
		off := cmdLen + 1
		for k := range m.Args {
			l := min(sc.spans[k+1].len, MaxArgLen)
			m.Args[k] = s[off : off+l]
			off += l + 1
		}
	}
	m.Keys = sc.keys(b, info.keys, m.Args)
	m.Text = summary(s, cut)
	return m
}

// keys returns the keys of a complete request whose command has the given keySpec.
func (sc *reqScan) keys(b []byte, spec keySpec, args []string) []string {
	nargs := sc.n - 1
	lo, hi, step := 0, 0, 1 // the keys are arguments lo, lo+step, ... below hi
	switch spec {
	case keysNone:
		return nil
	case keysFirst:
		hi = 1
	case keysAll:
		hi = nargs
	case keysFirstTwo:
		hi = 2
	case keysSecond:
		lo, hi = 1, 2
	case keysAllButLast:
		hi = nargs - 1
	case keysPairs:
		hi, step = nargs, 2
	case keysNumkeys:
		if nargs < 2 {
			return nil
		}
		sp := sc.spans[2]
		nk, ok := smallUint(b[sp.off : sp.off+sp.len])
		if !ok {
			return nil
		}
		lo, hi = 2, 2+nk
	}
	hi = min(hi, nargs)
	if hi <= lo {
		return nil
	}
	count := min((hi-lo+step-1)/step, MaxArgs)
	hi = lo + (count-1)*step + 1

	if step == 1 && hi <= len(args) {
		whole := true
		for k := lo; k < hi; k++ {
			if sc.spans[k+1].len > MaxArgLen {
				whole = false
				break
			}
		}
		if whole {
			return args[lo:hi:hi]
		}
	}
	keys := make([]string, 0, count)
	for k := lo; k < hi; k += step {
		sp := sc.spans[k+1]
		if k < len(args) && sp.len <= MaxArgLen {
			keys = append(keys, args[k])
		} else {
			keys = append(keys, string(b[sp.off:sp.off+min(sp.len, MaxKeyLen)]))
		}
	}
	return keys
}

// Next implements Framer.
func (respReplies) Next(b []byte) (int, Message, error) {
	i, attr := 0, int64(-1)
	for {
		if i >= len(b) {
			return 0, Message{}, nil
		}
		h, err := respItem(b, i)
		if err != nil || h.next == more {
			return 0, Message{}, err
		}
		end, err := respSkip(b, h.next, h.nested)
		if err != nil || end == more {
			return 0, Message{}, err
		}
		if h.typ == '|' {
			if attr < 0 {
				attr = h.n
			}
			i = end
			continue
		}
		return end, replyMessage(b, h, attr), nil
	}
}

// respHead is one RESP value's own bytes: its header line and, for blob types, its payload.
type respHead struct {
	typ    byte
	at     int    // where the type byte is
	val    []byte // the line after the type byte (line types) or the payload (blob types)
	n      int64  // length (blob types) or count (aggregates); -1 for null
	next   int    // just past the value's own bytes, or more
	nested int64  // how many values follow as parts of this one
}

// maxPending bounds how many nested values a reply may still owe; it keeps the count far
// from overflow on hostile input.
const maxPending = 1 << 40

// respItem reads the header of the value at b[i] (i < len(b)). It returns h.next == more
// when b ends first.
func respItem(b []byte, i int) (h respHead, err error) {
	h.typ, h.at = b[i], i
	switch h.typ {
	case '+', '-', ':', '_', ',', '#', '(':
		end, err := respLineEnd(b, i+1)
		if err != nil || end == more {
			h.next = more
			return h, err
		}
		h.val, h.next = b[i+1:end-2], end
		ok := true
		switch h.typ {
		case ':':
			ok = isInt(h.val, 19)
		case '(':
			ok = isInt(h.val, MaxLine)
		case '_':
			ok = len(h.val) == 0
		case '#':
			ok = len(h.val) == 1 && (h.val[0] == 't' || h.val[0] == 'f')
		case ',':
			ok = len(h.val) > 0
		}
		if !ok {
			return h, respErr(i, "malformed "+string(h.typ)+" line")
		}
		return h, nil
	case '$', '!', '=':
		l, j, err := respLen(b, i+1)
		if err != nil || j == more {
			h.next = more
			return h, err
		}
		h.n = l
		if l < 0 {
			h.next = j
			return h, nil
		}
		if l > MaxBulk {
			return h, respErr(i+1, "bulk length over 512 MiB")
		}
		end := j + int(l)
		if err := respCRLF(b, end); err != nil || end+2 > len(b) {
			h.next = more
			return h, err
		}
		h.val, h.next = b[j:end], end+2
		if h.typ == '=' && (l < 4 || h.val[3] != ':') {
			return h, respErr(j, "verbatim string without its format")
		}
		return h, nil
	case '*', '%', '~', '>', '|':
		l, j, err := respLen(b, i+1)
		if err != nil || j == more {
			h.next = more
			return h, err
		}
		if l < 0 && h.typ == '|' {
			return h, respErr(i+1, "null attribute")
		}
		if l > 1<<32 {
			return h, respErr(i+1, "aggregate count too large")
		}
		h.n, h.next = l, j
		if l > 0 {
			h.nested = l
			if h.typ == '%' || h.typ == '|' {
				h.nested = 2 * l
			}
		}
		return h, nil
	}
	return h, respErr(i, "unknown type byte "+strconv.QuoteRune(rune(h.typ)))
}

// respSkip skips pending whole values starting at b[i] and returns where they end, or more.
func respSkip(b []byte, i int, pending int64) (int, error) {
	for pending > 0 {
		if i >= len(b) {
			return more, nil
		}
		h, err := respItem(b, i)
		if err != nil || h.next == more {
			return more, err
		}
		i = h.next
		if h.typ != '|' { // an attribute is extra: the value it describes still follows
			pending--
		}
		pending += h.nested
		if pending > maxPending {
			return more, respErr(h.at, "too many nested values")
		}
	}
	return i, nil
}

// replyMessage builds the Message of the complete reply whose header is h; attr is the count
// of the first attribute before it, or -1.
func replyMessage(b []byte, h respHead, attr int64) Message {
	var m Message
	raw := b[h.at:h.next] // for line types: the line without its CRLF, below
	switch h.typ {
	case '+':
		raw = raw[:len(raw)-2]
		switch string(h.val) {
		case "OK":
			m.Text = "+OK"
		case "QUEUED":
			m.Text = "+QUEUED"
		case "PONG":
			m.Text = "+PONG"
		default:
			m.Text = summary(raw, false)
		}
	case '-':
		m.Err = true
		m.Text = summary(raw[:len(raw)-2], false)
	case ':':
		m.Zero = len(h.val) == 1 && h.val[0] == '0'
		if v, ok := smallUint(h.val); ok && v < len(intTexts) {
			m.Text = intTexts[v]
		} else {
			m.Text = summary(raw[:len(raw)-2], false)
		}
	case '_':
		m.Null, m.Text = true, "(nil)"
	case ',', '#', '(':
		m.Text = summary(raw[:len(raw)-2], false)
	case '!':
		if h.n < 0 {
			m.Null, m.Text = true, "(nil)"
			break
		}
		m.Err = true
		var buf [MaxText + 1]byte
		buf[0] = '!'
		k := 1 + copy(buf[1:], h.val)
		m.Text = summary(buf[:k], len(h.val) > MaxText)
	case '$', '=', '*', '%', '~', '>':
		if h.n < 0 {
			m.Null, m.Text = true, "(nil)"
			break
		}
		m.Text = countText(h.typ, h.n)
		if h.typ == '>' {
			m.Push = true
			if h.n > 0 { // name the push's kind: "message", "invalidate", ...
				if k, err := respItem(b, h.next); err == nil && k.next != more &&
					(k.typ == '$' || k.typ == '+') && k.n >= 0 {
					m.Text = summary(m.Text+" "+string(k.val), false)
				}
			}
		}
	}
	if attr >= 0 {
		m.Text = summary(countText('|', attr)+" "+m.Text, false)
	}
	return m
}

// Texts of common replies, shared rather than built each time.
var (
	intTexts  [100]string // ":0" ... ":99"
	bulkTexts [100]string // "$0" ... "$99"
	arrTexts  [32]string  // "*0" ... "*31"
)

func init() {
	for i := range intTexts {
		intTexts[i] = ":" + strconv.Itoa(i)
		bulkTexts[i] = "$" + strconv.Itoa(i)
	}
	for i := range arrTexts {
		arrTexts[i] = "*" + strconv.Itoa(i)
	}
}

// countText returns typ followed by n in decimal: "$3", "*2".
func countText(typ byte, n int64) string {
	switch {
	case typ == '$' && n < int64(len(bulkTexts)):
		return bulkTexts[n]
	case typ == '*' && n < int64(len(arrTexts)):
		return arrTexts[n]
	}
	var buf [24]byte
	return string(strconv.AppendInt(append(buf[:0], typ), n, 10))
}

// respLen reads the decimal length or count that starts at b[i] and ends in CRLF. It returns
// the value and the index just past the CRLF, or more. Only -1 may be negative.
func respLen(b []byte, i int) (v int64, next int, err error) {
	j := i
	neg := j < len(b) && b[j] == '-'
	if neg {
		j++
	}
	start := j
	for ; j < len(b); j++ {
		c := b[j]
		if c < '0' || c > '9' {
			break
		}
		if j-start == 18 {
			return 0, more, respErr(i, "length too long")
		}
		v = v*10 + int64(c-'0')
	}
	switch {
	case j == len(b):
		return 0, more, nil
	case j == start || b[j] != '\r':
		return 0, more, respErr(j, "length is not a number")
	case j+1 == len(b):
		return 0, more, nil
	case b[j+1] != '\n':
		return 0, more, respErr(j+1, "CR without LF")
	}
	if neg {
		if v != 1 {
			return 0, more, respErr(i, "negative length other than -1")
		}
		v = -1
	}
	return v, j + 2, nil
}

// respLineEnd returns the index just past the CRLF that ends the line starting at b[start],
// or more.
func respLineEnd(b []byte, start int) (int, error) {
	lim := min(len(b), start+MaxLine+2)
	j := bytes.IndexByte(b[start:lim], '\n')
	if j < 0 {
		if lim-start >= MaxLine+2 {
			return more, respErr(start, "line longer than 64 KiB")
		}
		return more, nil
	}
	if j == 0 || b[start+j-1] != '\r' {
		return more, respErr(start+j, "LF without CR")
	}
	return start + j + 1, nil
}

// respCRLF checks the CRLF that must follow a payload ending at b[end], as far as b goes.
func respCRLF(b []byte, end int) error {
	if end < len(b) && b[end] != '\r' || end+1 < len(b) && b[end+1] != '\n' {
		return respErr(end, "payload not followed by CRLF")
	}
	return nil
}

// isInt reports whether s is an optional '-' and 1 to maxDigits decimal digits.
func isInt(s []byte, maxDigits int) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > maxDigits {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// smallUint parses s as a decimal number of 1 to 9 digits.
func smallUint(s []byte) (int, bool) {
	if len(s) == 0 || len(s) > 9 {
		return 0, false
	}
	v := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}
