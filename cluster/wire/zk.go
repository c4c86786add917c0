package wire

import (
	"encoding/binary"
	"strconv"
)

// ZooKeeper facts relied on here, from zookeeper.jute (the record layouts), ZooDefs.OpCode
// (opcode numbers and names), ClientCnxn (the special xids), KeeperException.Code (error
// codes) and Watcher.Event (event types and states) in the ZooKeeper sources, and
// github.com/go-zookeeper/zk's structs.go, constants.go and conn.go:
//
//   - Every message in both directions is a big-endian int32 length, then that many bytes.
//   - jute encodes int as 4 bytes and long as 8, big-endian; boolean as 1 byte; a ustring or
//     buffer as an int32 length (-1 for null) then the bytes.
//   - The first message a client sends is a ConnectRequest {int protocolVersion; long
//     lastZxidSeen; int timeOut; long sessionId; buffer passwd; boolean readOnly}, where
//     readOnly is optional (go-zookeeper leaves it out); the server's first is a
//     ConnectResponse {int protocolVersion; int timeOut; long sessionId; buffer passwd;
//     boolean readOnly}, also with readOnly optional. Neither has a header. A response with
//     sessionId 0 or timeOut <= 0 refuses the session: it has expired.
//   - Every later request is a RequestHeader {int xid; int type} then the opcode's record;
//     every later reply is a ReplyHeader {int xid; long zxid; int err} then, when err is 0,
//     the record of the request's reply. A reply carries its request's xid.
//   - Special xids: -1 a watch event (the record is WatcherEvent {int type; int state;
//     ustring path}), -2 ping, -4 auth, -8 setWatches (Java client; go-zookeeper sends auth
//     and setWatches with ordinary xids, so its requests are known by opcode and their
//     replies are ordinary replies).
//   - The record of every request listed in zkPathOps starts with its path (a ustring).

// NewZKRequests returns a Framer for the client → server direction of a ZooKeeper
// connection. Its first message is the ConnectRequest (Cmd "connect", Control); every later
// one has Cmd (the opcode's name), Xid and, when the request has a path, Keys holding it.
// multi, multiRead, reconfig and the rest have no single path, so no Keys.
//
// Only the frame, the connect message and the request header must be well-formed: a request
// whose path does not fit in its frame just has no Keys and a Text ending in "(bad path)".
func NewZKRequests() Framer { return &zkRequests{} }

// NewZKReplies returns a Framer for the server → client direction of a ZooKeeper connection.
// Its first message is the ConnectResponse (Control, Text "connected session 0x..."); every
// later one has Xid and Err (header err != 0). A watch event (xid -1) has Push, Keys holding
// its path and Text like "event NodeDeleted /lock/n-0000000001"; the replies with xid -2
// (ping), -4 (auth) and -8 (setWatches) are Control. Cmd is empty on replies: a reply does
// not say which opcode it answers.
func NewZKReplies() Framer { return &zkReplies{} }

// zkRequests frames requests; connected is set once the ConnectRequest has been returned.
type zkRequests struct{ connected bool }

// zkReplies frames replies; connected is set once the ConnectResponse has been returned.
type zkReplies struct{ connected bool }

// Opcodes, as in ZooDefs.OpCode.
const (
	opPing        = 11
	opAuth        = 100
	opSetWatches  = 101
	opSasl        = 102
	opSetWatches2 = 105
)

// Special xids, as in ClientCnxn.
const (
	xidWatchEvent = -1
	xidPing       = -2
	xidAuth       = -4
	xidSetWatches = -8
)

// zkOpNames are ZooDefs.OpCode's names, by opcode.
var zkOpNames = map[int32]string{
	0: "notification", 1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData",
	6: "getACL", 7: "setACL", 8: "getChildren", 9: "sync", 11: "ping", 12: "getChildren2",
	13: "check", 14: "multi", 15: "create2", 16: "reconfig", 17: "checkWatches",
	18: "removeWatches", 19: "createContainer", 20: "deleteContainer", 21: "createTTL",
	22: "multiRead", 100: "auth", 101: "setWatches", 102: "sasl", 103: "getEphemerals",
	104: "getAllChildrenNumber", 105: "setWatches2", 106: "addWatch", 107: "whoAmI",
	-10: "createSession", -11: "closeSession", -1: "error",
}

// zkPathOps are the opcodes whose request record starts with a path.
var zkPathOps = map[int32]bool{
	1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true,
	12: true, 13: true, 15: true, 17: true, 18: true, 19: true, 20: true, 21: true,
	103: true, 104: true, 106: true,
}

// zkErrNames are KeeperException.Code's names, by code.
var zkErrNames = map[int32]string{
	-1: "SystemError", -2: "RuntimeInconsistency", -3: "DataInconsistency",
	-4: "ConnectionLoss", -5: "MarshallingError", -6: "Unimplemented",
	-7: "OperationTimeout", -8: "BadArguments", -12: "UnknownSession",
	-13: "NewConfigNoQuorum", -14: "ReconfigInProgress", -100: "APIError", -101: "NoNode",
	-102: "NoAuth", -103: "BadVersion", -108: "NoChildrenForEphemerals", -110: "NodeExists",
	-111: "NotEmpty", -112: "SessionExpired", -113: "InvalidCallback", -114: "InvalidACL",
	-115: "AuthFailed", -118: "SessionMoved", -119: "NotReadOnly",
	-120: "EphemeralOnLocalSession", -121: "NoWatcher", -122: "RequestTimeout",
	-123: "ReconfigDisabled", -124: "SessionClosedRequireSaslAuth", -125: "QuotaExceeded",
	-127: "ThrottledOp",
}

// zkEventNames are Watcher.Event.EventType's names, by type.
var zkEventNames = map[int32]string{
	-1: "None", 1: "NodeCreated", 2: "NodeDeleted", 3: "NodeDataChanged",
	4: "NodeChildrenChanged", 5: "DataWatchRemoved", 6: "ChildWatchRemoved",
	7: "PersistentWatchRemoved",
}

// zkStateNames are Watcher.Event.KeeperState's names, by state.
var zkStateNames = map[int32]string{
	-1: "Unknown", 0: "Disconnected", 1: "NoSyncConnected", 3: "SyncConnected",
	4: "AuthFailed", 5: "ConnectedReadOnly", 6: "SaslAuthenticated", 7: "Closed",
	-112: "Expired",
}

// ZKOpName returns ZooDefs.OpCode's name of a ZooKeeper opcode ("create", "getChildren2"),
// or "op<N>" for an opcode it does not know.
func ZKOpName(op int32) string {
	if s, ok := zkOpNames[op]; ok {
		return s
	}
	return "op" + strconv.Itoa(int(op))
}

// ZKErrName returns KeeperException.Code's name of a ZooKeeper error code in CamelCase
// ("NoNode", "SessionExpired"), "OK" for 0, or "" for a code it does not know.
func ZKErrName(code int32) string {
	if code == 0 {
		return "OK"
	}
	return zkErrNames[code]
}

func zkErr(at int, why string) error { return &protoError{proto: "zookeeper", at: at, why: why} }

// zkFrame returns the body of the frame at the start of b, or ok == false when b does not
// hold all of it yet. minLen is the shortest body the frame may have.
func zkFrame(b []byte, minLen int) (body []byte, ok bool, err error) {
	if len(b) < 4 {
		return nil, false, nil
	}
	l := int32(binary.BigEndian.Uint32(b))
	if l < 0 || l > MaxZKFrame {
		return nil, false, zkErr(0, "frame length "+strconv.Itoa(int(l))+" out of range")
	}
	if int(l) < minLen {
		return nil, false, zkErr(0, "frame of "+strconv.Itoa(int(l))+" bytes too short")
	}
	if len(b) < 4+int(l) {
		return nil, false, nil
	}
	return b[4 : 4+int(l)], true, nil
}

func be32(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }
func be64(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// zkString reads the ustring or buffer at b[i:]. It returns its bytes (nil for null) and ok ==
// false when it does not fit in b.
func zkString(b []byte, i int) (s []byte, end int, ok bool) {
	if i+4 > len(b) {
		return nil, i, false
	}
	l := be32(b[i:])
	switch {
	case l == -1:
		return nil, i + 4, true
	case l < -1 || int64(l) > int64(len(b)-i-4):
		return nil, i, false
	}
	return b[i+4 : i+4+int(l)], i + 4 + int(l), true
}

// zkConnectTail checks what follows the passwd buffer that starts at body[i]: nothing or the
// readOnly boolean. It returns whether readOnly is there and true.
func zkConnectTail(body []byte, i int) (readOnly, ok bool) {
	_, end, ok := zkString(body, i)
	if !ok {
		return false, false
	}
	switch len(body) - end {
	case 0:
		return false, true
	case 1:
		return body[end] != 0, true
	}
	return false, false
}

// Next implements Framer.
func (f *zkRequests) Next(b []byte) (int, Message, error) {
	if !f.connected {
		// protocolVersion, lastZxidSeen, timeOut, sessionId, passwd's length
		body, ok, err := zkFrame(b, 4+8+4+8+4)
		if !ok {
			return 0, Message{}, err
		}
		readOnly, ok := zkConnectTail(body, 24)
		if !ok {
			return 0, Message{}, zkErr(4, "not a ZooKeeper ConnectRequest")
		}
		f.connected = true
		var buf [MaxText]byte
		t := append(buf[:0], "connect session 0x"...)
		t = strconv.AppendUint(t, uint64(be64(body[16:])), 16)
		t = append(t, " timeout "...)
		t = strconv.AppendInt(t, int64(be32(body[12:])), 10)
		t = append(t, "ms"...)
		if readOnly {
			t = append(t, " readonly"...)
		}
		return 4 + len(body), Message{Cmd: "connect", Control: true, Text: summary(t, false)}, nil
	}

	body, ok, err := zkFrame(b, 8) // RequestHeader: xid, type
	if !ok {
		return 0, Message{}, err
	}
	xid, op := be32(body), be32(body[4:])
	m := Message{Cmd: ZKOpName(op), Xid: xid}
	switch {
	case op == opPing || xid == xidPing,
		op == opAuth || xid == xidAuth,
		op == opSetWatches || op == opSetWatches2 || xid == xidSetWatches,
		op == opSasl:
		m.Control = true
	}

	var buf [2 * MaxText]byte
	t := append(buf[:0], m.Cmd...)
	path, pathOK := []byte(nil), true
	if zkPathOps[op] {
		path, _, pathOK = zkString(body, 8)
	} else if op == opAuth { // AuthPacket {int type; ustring scheme; buffer auth}: name the scheme
		if scheme, _, ok := zkString(body, 12); ok && scheme != nil {
			t = append(append(t, ' '), scheme[:min(len(scheme), MaxText)]...)
		}
	}
	var keyAt int // where the path is in t, or -1 when t does not hold all of it
	if path != nil {
		t = append(t, ' ')
		keyAt = len(t)
		if len(path) > MaxText {
			keyAt = -1
		}
		t = append(t, path[:min(len(path), MaxText)]...)
	}
	if !pathOK {
		t = append(t, " (bad path)"...)
	}
	t = append(t, " (xid "...)
	t = strconv.AppendInt(t, int64(xid), 10)
	t = append(t, ')')

	if path == nil {
		m.Text = summary(t, false)
		return 4 + len(body), m, nil
	}
	// One string for Text and the path when Text holds all of both.
	if keyAt >= 0 && len(t) <= MaxText && printable(t) {
		m.Text = string(t)
		m.Keys = []string{m.Text[keyAt : keyAt+len(path)]}
	} else {
		m.Text = summary(t, false)
		m.Keys = []string{string(path[:min(len(path), MaxKeyLen)])}
	}
	return 4 + len(body), m, nil
}

// Next implements Framer.
func (f *zkReplies) Next(b []byte) (int, Message, error) {
	if !f.connected {
		// protocolVersion, timeOut, sessionId, passwd's length
		body, ok, err := zkFrame(b, 4+4+8+4)
		if !ok {
			return 0, Message{}, err
		}
		readOnly, ok := zkConnectTail(body, 16)
		if !ok {
			return 0, Message{}, zkErr(4, "not a ZooKeeper ConnectResponse")
		}
		f.connected = true
		timeout, session := be32(body[4:]), be64(body[8:])
		m := Message{Control: true, Err: session == 0 || timeout <= 0}
		var buf [MaxText]byte
		t := append(buf[:0], "connected session 0x"...)
		t = strconv.AppendUint(t, uint64(session), 16)
		t = append(t, " timeout "...)
		t = strconv.AppendInt(t, int64(timeout), 10)
		t = append(t, "ms"...)
		if readOnly {
			t = append(t, " readonly"...)
		}
		if m.Err {
			t = append(t, " (expired)"...)
		}
		m.Text = summary(t, false)
		return 4 + len(body), m, nil
	}

	body, ok, err := zkFrame(b, 16) // ReplyHeader: xid, zxid, err
	if !ok {
		return 0, Message{}, err
	}
	xid, code := be32(body), be32(body[12:])
	m := Message{Xid: xid, Err: code != 0}
	var buf [2 * MaxText]byte
	var t []byte
	switch xid {
	case xidWatchEvent:
		m.Push = true
		t = zkEventText(&m, body, buf[:0])
	case xidPing:
		m.Control = true
		t = append(buf[:0], "ping reply"...)
	case xidAuth:
		m.Control = true
		t = append(buf[:0], "auth reply"...)
	case xidSetWatches:
		m.Control = true
		t = append(buf[:0], "setWatches reply"...)
	default:
		t = append(buf[:0], "reply xid "...)
		t = strconv.AppendInt(t, int64(xid), 10)
	}
	if code != 0 {
		t = append(t, " err "...)
		t = strconv.AppendInt(t, int64(code), 10)
		if name := zkErrNames[code]; name != "" {
			t = append(append(append(t, " ("...), name...), ')')
		}
	}
	if m.Text == "" {
		m.Text = summary(t, false)
	}
	return 4 + len(body), m, nil
}

// zkEventText names the watch event in body (after the 16-byte reply header) and sets m.Keys
// to its path. When the Text it builds holds the whole path, it sets m.Text too, so that the
// path is a slice of it.
func zkEventText(m *Message, body []byte, t []byte) []byte {
	t = append(t, "event "...)
	if len(body) < 16+8 {
		return append(t, "(short)"...)
	}
	typ, state := be32(body[16:]), be32(body[20:])
	if name, ok := zkEventNames[typ]; ok {
		t = append(t, name...)
	} else {
		t = strconv.AppendInt(append(t, "type "...), int64(typ), 10)
	}
	path, _, ok := zkString(body, 24)
	if !ok {
		return append(t, " (bad path)"...)
	}
	if typ == -1 || len(path) == 0 { // a session event: name the state instead
		if name, ok := zkStateNames[state]; ok {
			t = append(append(t, ' '), name...)
		} else {
			t = strconv.AppendInt(append(t, " state "...), int64(state), 10)
		}
	}
	if len(path) == 0 {
		return t
	}
	t = append(t, ' ')
	at := len(t)
	t = append(t, path[:min(len(path), MaxText)]...)
	if len(path) <= MaxText && len(t) <= MaxText && printable(t) &&
		be32(body[12:]) == 0 { // with an error, Text goes on
		m.Text = string(t)
		m.Keys = []string{m.Text[at:]}
		return t
	}
	m.Keys = []string{string(path[:min(len(path), MaxKeyLen)])}
	return t
}
