package history

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func sampleEvents() []Event {
	return []Event{
		{Type: TypeInvoke, ID: 17, Op: OpAcquire, Client: 3, Lock: "lock", AtNs: 1203400},
		{Type: TypeOk, ID: 17, AtNs: 1250100, Fence: 9, ValidityNs: 990000000, TTLNs: 1000000000, SentNs: 1204000},
		{Type: TypeInvoke, ID: 19, Op: OpWrite, Client: 3, Acq: 17, AtNs: 1301000, Value: Int64(-42), Fence: 9},
		{Type: TypeFail, ID: 19, AtNs: 1301300, Error: "stale fence"},
		{Type: TypeInvoke, ID: 20, Op: OpRead, Client: 1, Acq: 18, Lock: "other", AtNs: 5},
		{Type: TypeOk, ID: 20, AtNs: 6, Value: Int64(0)},
		{Type: TypeFault, Phase: PhaseStart, Fault: 4, Rule: 2, Name: "client-pause", Target: "client-3", Point: "cs:before-write", AtNs: 1260000, Detail: "for 1s"},
		{Type: TypeFault, Phase: PhaseUnfired, Rule: 1, Name: "partition", Point: "cs:acquired", Detail: "point never reached"},
		{Type: TypeAbort, AtNs: 1301200, Error: "client 3 broke the protocol: answered id 42"},
	}
}

// The recorder's own lines take the fast path, and it decodes them as encoding/json does.
func TestDecodeFastTakesRecorderLines(t *testing.T) {
	for _, e := range sampleEvents() {
		line := bytes.TrimSpace(AppendJSON(nil, e))
		var got Event
		if !decodeFast(line, &got) {
			t.Fatalf("fast path refused the recorder's line %s", line)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("%s:\ngot  %+v\nwant %+v", line, got, e)
		}
	}
	for _, line := range []string{
		`{"type":"ok","id":1,"at_ns":2,"error":"caf\u00e9"}`, // an escape
		`{"type":"ok", "id":1}`,                              // a space
		`{"Type":"ok"}`,                                      // a key in another case
		`{"type":"ok","value":1.5}`,                          // a float
		`{"type":"ok","extra":{"a":1}}`,                      // an unknown key
		`{"type":"ok"}x`,                                     // trailing data
	} {
		var e Event
		if decodeFast([]byte(line), &e) {
			t.Errorf("fast path accepted %s; it must leave it to encoding/json", line)
		}
	}
}

// ReadRunFile, streaming, gives what pairing Read's events gives, warnings included.
func TestReadRunFileMatchesRead(t *testing.T) {
	var buf []byte
	buf = append(buf, `{"type":"meta","algorithm":"token","scenario":"s","backend":"local","seed":1,"clients":3,"ttl_ns":1000,"started":"x","version":"v"}`+"\n"...)
	for _, e := range sampleEvents() {
		buf = AppendJSON(buf, e)
	}
	buf = append(buf, `{"type":"ok","id":18,"at_ns":9,"error":"\u003c\u003e odd"}`+"\n"...) // slow path
	buf = append(buf, `{"type":"invoke","id":21,"op":"acq`...)                              // truncated
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := h.Run()
	got, err := ReadRunFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadRunFile:\n%+v\nRead().Run():\n%+v", got, want)
	}
	if len(got.Ops) != 3 || len(got.Faults) != 1 || len(got.Unfired) != 1 || len(got.Warnings) != 1 || got.End != 1301300 ||
		got.Abort != "client 3 broke the protocol: answered id 42" {
		t.Fatalf("run = %d ops, %d faults, %d unfired, warnings %v, end %d, abort %q", len(got.Ops), len(got.Faults), len(got.Unfired), got.Warnings, got.End, got.Abort)
	}
}
