package process

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A process client reads the OS clock, which the harness cannot hand it as it hands the built-in
// locks their algorithms.Clock. libfaketime (Debian libfaketime, in make deps) moves one process's
// clock instead: in a run that plans a clock fault (Config.ClockMoves) the client starts with it
// preloaded, reading its offset from a file of its own
// (FAKETIME_TIMESTAMP_FILE, re-read at every clock call: FAKETIME_NO_CACHE), and a clock-skew
// fault rewrites that file (Locker.SetClock). It moves the wall clock and the monotonic clock
// alike, in Python (time.time, time.monotonic) and the JVM (currentTimeMillis, nanoTime); keeping
// the monotonic clock real (FAKETIME_DONT_FAKE_MONOTONIC=1) makes Python's time.sleep fail with
// EINVAL in libfaketime 0.9.10. docs/process-clients.md, "clock-skew".

// faketimeGlob finds libfaketime's preload library on any Debian architecture.
const faketimeGlob = "/usr/lib/*/faketime/libfaketime.so.1"

// FaketimeLib is libfaketime's preload library, or "" when it is not installed. The
// LOCKCHAOS_FAKETIME_LIB environment variable names another (or, set empty, none).
func FaketimeLib() string {
	if p, ok := os.LookupEnv("LOCKCHAOS_FAKETIME_LIB"); ok {
		return p
	}
	m, _ := filepath.Glob(faketimeGlob)
	if len(m) == 0 {
		return ""
	}
	return m[0]
}

// faketime is one client's clock file.
type faketime struct {
	lib, file string
	tmp       string        // a directory of our own to remove at Close ("" when in the run dir)
	offset    time.Duration // what the file says now
}

// newFaketime makes the clock file (offset 0) in dir, or in a temporary directory when dir is "".
func newFaketime(lib, dir string, client int) (*faketime, error) {
	f := &faketime{lib: lib}
	if dir == "" {
		d, err := os.MkdirTemp("", "lockchaos-faketime-")
		if err != nil {
			return nil, err
		}
		dir, f.tmp = d, d
	}
	f.file = filepath.Join(dir, fmt.Sprintf("client-%d.faketime", client))
	return f, f.write(0)
}

// env is the client's environment for libfaketime, appended to its own (an LD_PRELOAD it has
// already is kept after ours).
func (f *faketime) env(base []string) []string {
	pre := f.lib
	for _, kv := range base {
		if v, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok && v != "" {
			pre += ":" + v
		}
	}
	return append(base, "LD_PRELOAD="+pre, "FAKETIME_TIMESTAMP_FILE="+f.file, "FAKETIME_NO_CACHE=1")
}

// write replaces the file's offset atomically (a rename), so a clock call never reads half a line.
func (f *faketime) write(offset time.Duration) error {
	tmp := f.file + ".new"
	line := fmt.Sprintf("%+.6f\n", offset.Seconds())
	if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, f.file); err != nil {
		return err
	}
	f.offset = offset
	return nil
}

func (f *faketime) close() {
	if f.tmp != "" {
		_ = os.RemoveAll(f.tmp)
	}
}

// loaded reports whether libfaketime is mapped in process pid (a static binary, or a runtime that
// drops LD_PRELOAD, never loads it).
func loaded(pid int, lib string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "maps"))
	return err == nil && strings.Contains(string(b), filepath.Base(lib))
}
