package history

import (
	"encoding/json"
	"strconv"
)

// AppendJSON appends e as one JSON line (with the trailing newline) to dst. It writes the same
// object encoding/json would, field for field, without reflection: the recorder is on the clients'
// hot path.
func AppendJSON(dst []byte, e Event) []byte {
	dst = append(dst, `{"type":`...)
	if t := string(e.Type); plainASCII(t) {
		// The types are a handful of plain words: skip AppendQuote's scan for escapes (it showed in
		// the recorder's profile); anything else is quoted as before.
		dst = append(dst, '"')
		dst = append(dst, t...)
		dst = append(dst, '"')
	} else {
		dst = strconv.AppendQuote(dst, t)
	}
	if e.ID != 0 {
		dst = appendInt(dst, "id", e.ID)
	}
	if e.Op != "" {
		dst = appendStr(dst, "op", string(e.Op))
	}
	if e.Client != 0 {
		dst = appendInt(dst, "client", int64(e.Client))
	}
	if e.Lock != "" {
		dst = appendStr(dst, "lock", e.Lock)
	}
	if e.Acq != 0 {
		dst = appendInt(dst, "acq", e.Acq)
	}
	dst = appendInt(dst, "at_ns", e.AtNs)
	if e.Fence != 0 {
		dst = append(dst, `,"fence":`...)
		dst = strconv.AppendUint(dst, e.Fence, 10)
	}
	if e.ValidityNs != 0 {
		dst = appendInt(dst, "validity_ns", e.ValidityNs)
	}
	if e.TTLNs != 0 {
		dst = appendInt(dst, "ttl_ns", e.TTLNs)
	}
	if e.SentNs != 0 {
		dst = appendInt(dst, "sent_ns", e.SentNs)
	}
	if e.Value != nil {
		dst = appendInt(dst, "value", *e.Value)
	}
	for _, f := range [...]struct{ k, v string }{
		{"error", e.Error}, {"phase", e.Phase},
	} {
		if f.v != "" {
			dst = appendStr(dst, f.k, f.v)
		}
	}
	if e.Fault != 0 {
		dst = appendInt(dst, "fault", e.Fault)
	}
	if e.Rule != 0 {
		dst = appendInt(dst, "rule", int64(e.Rule))
	}
	for _, f := range [...]struct{ k, v string }{
		{"name", e.Name}, {"target", e.Target}, {"point", e.Point}, {"detail", e.Detail}, {"acts_on", e.ActsOn},
	} {
		if f.v != "" {
			dst = appendStr(dst, f.k, f.v)
		}
	}
	if e.Lasting {
		dst = append(dst, `,"lasting":true`...)
	}
	if e.Arm {
		dst = append(dst, `,"arm":true`...)
	}
	if e.Refused {
		dst = append(dst, `,"refused":true`...)
	}
	if len(e.TargetClients) > 0 {
		dst = append(dst, `,"target_clients":[`...)
		for i, c := range e.TargetClients {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, int64(c), 10)
		}
		dst = append(dst, ']')
	}
	if len(e.TargetNodes) > 0 {
		dst = append(dst, `,"target_nodes":`...)
		b, _ := json.Marshal(e.TargetNodes) // strings always marshal
		dst = append(dst, b...)
	}
	if e.OutlastNs != 0 {
		dst = appendInt(dst, "outlast_ns", e.OutlastNs)
	}
	if e.Missed != "" {
		dst = appendStr(dst, "missed", e.Missed)
	}
	for _, f := range [...]struct{ k, v string }{
		{"node", e.Node}, {"dir", e.Dir}, {"cmd", e.Cmd}, {"key", e.Key},
	} {
		if f.v != "" {
			dst = appendStr(dst, f.k, f.v)
		}
	}
	return append(dst, '}', '\n')
}

func appendInt(dst []byte, k string, v int64) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, k...)
	dst = append(dst, '"', ':')
	return strconv.AppendInt(dst, v, 10)
}

// appendStr writes a JSON string. encoding/json's escaping (HTML-safe, valid UTF-8) is used for
// anything but plain ASCII, so odd names round-trip exactly.
func appendStr(dst []byte, k, v string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, k...)
	dst = append(dst, '"', ':')
	if plainASCII(v) {
		dst = append(dst, '"')
		dst = append(dst, v...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(v) // a string always marshals
	return append(dst, b...)
}

func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
