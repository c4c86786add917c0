package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/lockchaos/lockchaos/internal/lcerr"
)

// ErrCorrupt is wrapped by every decoding error of a history.
var ErrCorrupt = lcerr.New("history: corrupt")

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
	h := &History{}
	err := scan(r, &h.Meta, &h.Warnings, func(e *Event) error { h.Events = append(h.Events, *e); return nil })
	if err != nil {
		return nil, err
	}
	return h, nil
}

// ReadRunFile reads the history at path as a Run, pairing operations as it reads: the lines are
// never all in memory. It fails and tolerates exactly what Read does.
func ReadRunFile(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return ReadRun(f, size)
}

// ReadRun is ReadRunFile on a reader; size, the history's length in bytes if known (else 0),
// sizes the operations' slice.
func ReadRun(r io.Reader, size int64) (*Run, error) {
	var b runBuilder
	b.init(int(max(size/140, 1024))) // two lines of ≈70 bytes an operation
	var meta Meta
	var warnings []string
	if err := scan(r, &meta, &warnings, func(e *Event) error { b.add(e); return nil }); err != nil {
		return nil, err
	}
	run := b.done()
	run.Meta, run.Warnings = meta, warnings
	return run, nil
}

// scan decodes the meta line into meta and hands every event to fn, in file order; the event
// is reused after fn returns. An error from fn stops it, and is returned.
func scan(r io.Reader, meta *Meta, warnings *[]string, fn func(*Event) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	seenMeta := false
	var e Event
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: gather it whole.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("history: read: %w", err)
		}
		last := err == io.EOF
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		line = bytes.TrimSpace(line)
		if len(line) > 0 {
			var derr error
			if !seenMeta {
				derr = decodeMeta(line, meta)
			} else if derr = decodeEvent(line, &e); derr == nil {
				if err := fn(&e); err != nil {
					return err
				}
			}
			switch {
			case derr == nil:
				seenMeta = true
			case last && !complete && seenMeta:
				*warnings = append(*warnings, fmt.Sprintf("line %d is truncated (harness killed mid-write?); skipped", n))
			default:
				return &CorruptError{Line: n, Err: derr}
			}
		}
		if last {
			if !seenMeta {
				return &CorruptError{Line: n, Err: errors.New("no meta line: the file is empty")}
			}
			return nil
		}
	}
}

// decodeMeta decodes the first line.
func decodeMeta(line []byte, meta *Meta) error {
	if err := strictUnmarshal(line, meta); err != nil {
		return err
	}
	if meta.Type != TypeMeta {
		return fmt.Errorf("first line has type %q, want %q", meta.Type, TypeMeta)
	}
	return nil
}

// decodeEvent decodes and validates one event line into e (overwritten whole). Lines as the
// recorder writes them take a fast path; anything else goes through encoding/json.
func decodeEvent(line []byte, e *Event) error {
	*e = Event{}
	if !decodeFast(line, e) {
		*e = Event{}
		if err := strictUnmarshal(line, e); err != nil {
			return err
		}
	}
	return e.validate()
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
	case TypeAbort, TypeStop:
	case TypeWire:
		if e.Dir != WireRequest && e.Dir != WireReply {
			return fmt.Errorf("wire line with dir %q, want request or reply", e.Dir)
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
