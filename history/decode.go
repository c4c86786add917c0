package history

import "math"

// decodeFast decodes a line in the exact form AppendJSON writes — one flat object, no spaces, keys
// of Event, integers, null, strings without escapes or non-ASCII bytes — into e, and reports
// whether it could. Anything else (a key it does not know, an escape, a float, a space, trailing
// data) makes it return false, and the line goes through encoding/json, which decides what it
// means: the fast path never accepts a line encoding/json would decode differently. It is what
// makes reading a history of ten million operations take seconds, not minutes.
func decodeFast(line []byte, e *Event) bool {
	d := fastDecoder{b: line}
	if !d.byte('{') {
		return false
	}
	if d.byte('}') {
		return d.end()
	}
	for {
		key, ok := d.str()
		if !ok || !d.byte(':') || !d.field(key, e) {
			return false
		}
		if d.byte('}') {
			return d.end()
		}
		if !d.byte(',') {
			return false
		}
	}
}

type fastDecoder struct {
	b []byte
	i int
}

func (d *fastDecoder) byte(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *fastDecoder) end() bool { return d.i == len(d.b) }

// str reads a string without escapes or non-ASCII bytes, returning its bytes (in the line).
func (d *fastDecoder) str() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	start := d.i
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// int reads an integer in JSON's form (no leading zeros, no plus sign, no fraction) that fits an
// int64.
func (d *fastDecoder) int() (int64, bool) {
	neg := d.i < len(d.b) && d.b[d.i] == '-'
	if neg {
		d.i++
	}
	digits := d.i
	var v uint64
	for ; d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9'; d.i++ {
		if v > (math.MaxUint64-9)/10 {
			return 0, false // far too long: encoding/json decides
		}
		v = v*10 + uint64(d.b[d.i]-'0')
	}
	n := d.i - digits
	if n == 0 || (n > 1 && d.b[digits] == '0') {
		return 0, false
	}
	if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		return 0, false
	}
	switch {
	case !neg && v <= math.MaxInt64:
		return int64(v), true
	case neg && v <= 1<<63:
		return -int64(v), true // -(1<<63) wraps to itself, MinInt64
	}
	return 0, false
}

// bool reads true or false.
func (d *fastDecoder) bool() (bool, bool) {
	for _, w := range [...]string{"true", "false"} {
		if len(d.b)-d.i >= len(w) && string(d.b[d.i:d.i+len(w)]) == w {
			d.i += len(w)
			return w == "true", true
		}
	}
	return false, false
}

func (d *fastDecoder) null() bool {
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// field decodes the value of key into e. Only exact (lower-case) keys are known: encoding/json
// also matches keys case-insensitively, so any other key goes back to it.
func (d *fastDecoder) field(key []byte, e *Event) bool {
	k := string(key) // the compiler does not allocate for a switch on string(bytes)
	switch k {
	case "type", "op", "lock", "error", "phase", "name", "target", "point", "detail", "acts_on", "missed", "node", "dir", "cmd", "key":
		if d.null() {
			return true // null leaves a string as it was, as encoding/json does
		}
		v, ok := d.str()
		if !ok {
			return false
		}
		switch k {
		case "type":
			e.Type = Type(intern(v, typeNames))
		case "op":
			e.Op = Op(intern(v, opNames))
		case "lock":
			e.Lock = intern(v, lockNames)
		case "error":
			e.Error = string(v)
		case "phase":
			e.Phase = intern(v, phaseNames)
		case "name":
			e.Name = string(v)
		case "target":
			e.Target = string(v)
		case "point":
			e.Point = string(v)
		case "detail":
			e.Detail = string(v)
		case "acts_on":
			e.ActsOn = intern(v, actsOnNames)
		case "missed":
			e.Missed = string(v)
		case "node":
			e.Node = string(v)
		case "dir":
			e.Dir = intern(v, dirNames)
		case "cmd":
			e.Cmd = string(v)
		case "key":
			e.Key = intern(v, lockNames)
		}
		return true
	case "lasting", "arm", "refused":
		if d.null() {
			return true
		}
		v, ok := d.bool()
		if !ok {
			return false
		}
		switch k {
		case "lasting":
			e.Lasting = v
		case "arm":
			e.Arm = v
		default:
			e.Refused = v
		}
		return true
	case "value":
		if d.null() {
			e.Value = nil
			return true
		}
		v, ok := d.int()
		if ok {
			e.Value = &v
		}
		return ok
	case "id", "client", "acq", "at_ns", "fence", "validity_ns", "ttl_ns", "sent_ns", "fault", "rule", "outlast_ns":
		if d.null() {
			return true
		}
		v, ok := d.int()
		if !ok {
			return false
		}
		switch k {
		case "id":
			e.ID = v
		case "client":
			if int64(int(v)) != v {
				return false
			}
			e.Client = int(v)
		case "acq":
			e.Acq = v
		case "at_ns":
			e.AtNs = v
		case "fence":
			if v < 0 {
				return false // a uint64 above MaxInt64, or a negative fence: encoding/json decides
			}
			e.Fence = uint64(v)
		case "validity_ns":
			e.ValidityNs = v
		case "ttl_ns":
			e.TTLNs = v
		case "sent_ns":
			e.SentNs = v
		case "fault":
			e.Fault = v
		case "outlast_ns":
			e.OutlastNs = v
		case "rule":
			if int64(int(v)) != v {
				return false
			}
			e.Rule = int(v)
		}
		return true
	}
	return false
}

var (
	typeNames   = []string{string(TypeInvoke), string(TypeOk), string(TypeFail), string(TypeInfo), string(TypeFault), string(TypeMeta), string(TypeAbort), string(TypeWire), string(TypeStop)}
	opNames     = []string{string(OpAcquire), string(OpRelease), string(OpRead), string(OpWrite)}
	phaseNames  = []string{PhaseStart, PhaseEnd, PhaseUnfired}
	dirNames    = []string{WireRequest, WireReply}
	actsOnNames = []string{ActsOnServers, ActsOnClock, ActsOnNetwork, ActsOnProcess, ActsOnHarness}
	lockNames   = []string{"lock"}
)

// intern returns the known string equal to v, so the common values cost no allocation.
func intern(v []byte, known []string) string {
	for _, s := range known {
		if string(v) == s {
			return s
		}
	}
	return string(v)
}
