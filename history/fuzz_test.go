package history

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzRead feeds arbitrary bytes to the decoder: it must never panic, and whatever it accepts
// must survive a round trip through the recorder's encoding unchanged.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"type":"meta","algorithm":"token","scenario":"s","backend":"local","seed":42,"clients":5,"ttl_ns":1000000000,"started":"x","version":"v"}
{"type":"invoke","id":17,"op":"acquire","client":3,"lock":"lock","at_ns":1203400}
{"type":"ok","id":17,"at_ns":1250100,"fence":9,"validity_ns":990000000,"ttl_ns":1000000000}
{"type":"invoke","id":18,"op":"read","client":3,"acq":17,"at_ns":1251000}
{"type":"ok","id":18,"at_ns":1251200,"value":41}
{"type":"invoke","id":19,"op":"write","client":3,"acq":17,"at_ns":1301000,"value":42,"fence":9}
{"type":"fail","id":19,"at_ns":1301300,"error":"stale fence"}
{"type":"fault","phase":"start","fault":4,"name":"client-pause","target":"client-3","point":"cs:before-write","at_ns":1260000}
{"type":"fault","phase":"end","fault":4,"at_ns":2460000,"error":""}
{"type":"invoke","id":20,"op":"release","client":3,"acq":17,"at_ns":1302000}
{"type":"info","id":20,"at_ns":2302000,"error":"i/o timeout"}
{"type":"invoke","id":21,"op":"acq`))
	f.Add([]byte(`{"type":"meta"}` + "\n" + `{"type":"invoke","id":1,"op":"write","value":-3,"at_ns":0,"detail":"<&>\u00e9"}`))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		if h.Meta.Type != TypeMeta {
			t.Fatalf("Read accepted a history without a meta line: %q", data)
		}
		meta, err := json.Marshal(h.Meta)
		if err != nil {
			t.Fatalf("meta does not re-encode: %v", err)
		}
		buf := append(meta, '\n')
		for _, e := range h.Events {
			buf = AppendJSON(buf, e)
		}
		h2, err := Read(bytes.NewReader(buf))
		if err != nil {
			t.Fatalf("re-encoded history does not decode: %v\n%s", err, buf)
		}
		if !reflect.DeepEqual(h.Meta, h2.Meta) {
			t.Fatalf("meta changed:\n%+v\n%+v", h.Meta, h2.Meta)
		}
		if len(h.Events) != len(h2.Events) || (len(h.Events) > 0 && !reflect.DeepEqual(h.Events, h2.Events)) {
			t.Fatalf("events changed:\n%+v\n%+v", h.Events, h2.Events)
		}
		if len(h2.Warnings) != 0 {
			t.Fatalf("re-encoded history has warnings %v", h2.Warnings)
		}
	})
}

// FuzzDecodeFast: whatever line the fast path accepts, encoding/json decodes to the same event.
func FuzzDecodeFast(f *testing.F) {
	for _, e := range sampleEvents() {
		f.Add(AppendJSON(nil, e)[:len(AppendJSON(nil, e))-1])
	}
	f.Add([]byte(`{"type":"ok","id":1,"at_ns":2,"value":null,"fence":18446744073709551615}`))
	f.Add([]byte(`{"Type":"ok","id":01,"at_ns":-0,"value":1e3}`))
	f.Add([]byte(`{"type":"ok","id":9223372036854775807,"at_ns":-9223372036854775808,"value":-9223372036854775809}`))
	f.Add([]byte(`{"type":"ok","id":1,"at_ns":99999999999999999999999}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast Event
		if !decodeFast(line, &fast) {
			return
		}
		var slow Event
		if err := strictUnmarshal(line, &slow); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refuses it: %v", line, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", line, fast, slow)
		}
	})
}
