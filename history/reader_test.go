package history

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	const meta = `{"type":"meta","algorithm":"token","scenario":"baseline","backend":"local","seed":1,"clients":1,"ttl_ns":1,"started":"","version":""}`
	const inv = `{"type":"invoke","id":1,"op":"acquire","client":1,"lock":"lock","at_ns":5}`
	for _, tc := range []struct {
		name      string
		in        string
		events    int
		warnings  int
		corruptAt int // line of the expected CorruptError, 0 for none
	}{
		{"meta only", meta + "\n", 0, 0, 0},
		{"two events", meta + "\n" + inv + "\n" + `{"type":"ok","id":1,"at_ns":9}` + "\n", 2, 0, 0},
		{"truncated last line is a warning", meta + "\n" + inv + "\n" + `{"type":"ok","id":1,"at`, 1, 1, 0},
		{"complete bad last line is corrupt", meta + "\n" + inv + "\n" + `{"type":"ok","id":1,"at` + "\n", 0, 0, 3},
		{"bad middle line", meta + "\nnot json\n" + inv + "\n", 0, 0, 2},
		{"unknown op", meta + "\n" + `{"type":"invoke","id":1,"op":"steal","at_ns":1}` + "\n", 0, 0, 2},
		{"no meta", inv + "\n", 0, 0, 1},
		{"empty", "", 0, 0, 1},
		{"blank lines only", "\n\n", 0, 0, 3},
		{"blank lines then event", "\n" + inv + "\n", 0, 0, 2},
		{"second meta", meta + "\n" + meta + "\n", 0, 0, 2},
		{"negative time", meta + "\n" + `{"type":"ok","id":1,"at_ns":-1}` + "\n", 0, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Read(strings.NewReader(tc.in))
			if tc.corruptAt != 0 {
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Line != tc.corruptAt || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("err = %v, want a CorruptError at line %d", err, tc.corruptAt)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Events) != tc.events || len(h.Warnings) != tc.warnings {
				t.Errorf("%d events, %d warnings (%v); want %d, %d", len(h.Events), len(h.Warnings), h.Warnings, tc.events, tc.warnings)
			}
		})
	}
}

// TestAppendJSONRoundTrip: the hand-written encoder writes what the decoder reads back.
func TestAppendJSONRoundTrip(t *testing.T) {
	e := Event{Type: TypeFault, Phase: PhaseStart, Fault: 3, Name: "client-pause", Target: `<script>"x"</script>`,
		Point: "cs:before-write", Detail: "é\n", AtNs: 42, Error: `a\b`, OutlastNs: 1500, Missed: "ended by its cap"}
	e.ActsOn, e.TargetClients = ActsOnProcess, []int{2}
	line := AppendJSON(nil, e)
	if want, _ := json.Marshal(e); string(line) != string(want)+"\n" {
		t.Errorf("AppendJSON wrote\n%s\nencoding/json writes\n%s", line, want)
	}
	h, err := Read(strings.NewReader(`{"type":"meta"}` + "\n" + string(line)))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Events[0]; !reflect.DeepEqual(got, e) {
		t.Errorf("round trip: got %+v, want %+v", got, e)
	}
}
