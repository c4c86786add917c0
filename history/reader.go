package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrCorrupt is wrapped by every decoding error of a history.
var ErrCorrupt = errors.New("history: corrupt")

// CorruptError says which line of a history could not be decoded and why.
type CorruptError struct {
	Line int
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("history: line %d: %v (the file is not a lockchaos history, or was edited; re-run to get a new one)", e.Line, e.Err)
}

// Unwrap lets errors.Is(err, ErrCorrupt) match.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// History is a decoded history file.
type History struct {
	Meta   Meta
	Events []Event
	// Warnings lists what was tolerated, e.g. a truncated last line left by a killed harness.
	Warnings []string
}

// ReadFile reads and decodes the history at path.
func ReadFile(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	return Read(f)
}

// Read decodes a history. A last line without its newline that does not decode is what a harness
// killed mid-write leaves: it is skipped with a warning. Any other undecodable line is an error.
func Read(r io.Reader) (*History, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	h := &History{}
	seenMeta := false
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("history: read: %w", err)
		}
		last := err == io.EOF
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		line = bytes.TrimSpace(line)
		if len(line) > 0 {
			derr := h.decodeLine(line, !seenMeta)
			if derr != nil {
				derr = &CorruptError{Line: n, Err: derr}
			}
			if derr == nil {
				seenMeta = true
			} else {
				if last && !complete && seenMeta {
					h.Warnings = append(h.Warnings, fmt.Sprintf("line %d is truncated (harness killed mid-write?); skipped", n))
				} else {
					return nil, derr
				}
			}
		}
		if last {
			if !seenMeta {
				return nil, &CorruptError{Line: n, Err: errors.New("no meta line: the file is empty")}
			}
			return h, nil
		}
	}
}

// decodeLine decodes one non-blank line: the meta line when first is set, else an event.
func (h *History) decodeLine(line []byte, first bool) error {
	if first {
		if err := strictUnmarshal(line, &h.Meta); err != nil {
			return err
		}
		if h.Meta.Type != TypeMeta {
			return fmt.Errorf("first line has type %q, want %q", h.Meta.Type, TypeMeta)
		}
		return nil
	}
	var e Event
	if err := strictUnmarshal(line, &e); err != nil {
		return err
	}
	if err := e.validate(); err != nil {
		return err
	}
	h.Events = append(h.Events, e)
	return nil
}

// strictUnmarshal decodes exactly one JSON object, tolerating unknown fields (newer writers may
// add fields) but not trailing data.
func strictUnmarshal(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

func (e *Event) validate() error {
	switch e.Type {
	case TypeInvoke:
		switch e.Op {
		case OpAcquire, OpRelease, OpRead, OpWrite:
		default:
			return fmt.Errorf("invoke with unknown op %q", e.Op)
		}
		if e.ID <= 0 {
			return errors.New("invoke without a positive id")
		}
	case TypeOk, TypeFail, TypeInfo:
		if e.ID <= 0 {
			return fmt.Errorf("%s without a positive id", e.Type)
		}
	case TypeFault:
		if e.Phase != PhaseStart && e.Phase != PhaseEnd && e.Phase != PhaseUnfired {
			return fmt.Errorf("fault with phase %q, want start, end or unfired", e.Phase)
		}
	case TypeMeta:
		return errors.New("a second meta line")
	default:
		return fmt.Errorf("unknown type %q", e.Type)
	}
	if e.AtNs < 0 {
		return fmt.Errorf("negative at_ns %d", e.AtNs)
	}
	return nil
}
