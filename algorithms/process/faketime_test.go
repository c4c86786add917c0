package process

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// clockOf asks the clock.py client for the clock its process reads: time.time(), time.monotonic().
func clockOf(t *testing.T, l *Locker) (wall, mono float64) {
	t.Helper()
	_, err := l.Acquire(context.Background())
	if err == nil {
		t.Fatal("clock.py granted an acquire")
	}
	i := strings.LastIndex(err.Error(), "clock ")
	if i < 0 {
		t.Fatalf("clock.py answered %v, want its clock", err)
	}
	if _, err := fmt.Sscanf(err.Error()[i:], "clock %f %f", &wall, &mono); err != nil {
		t.Fatalf("parsing %q: %v", err.Error()[i:], err)
	}
	return wall, mono
}

// TestSetClockMovesTheProcess: SetClock moves a Python process's own clock through libfaketime —
// time.time() and time.monotonic() both jump ahead by the offset — and a heal leaves it ahead
// (a step back would run the process's monotonic clock backwards). A clock it cannot apply (one
// behind, a rate) breaks the client instead of passing for applied.
func TestSetClockMovesTheProcess(t *testing.T) {
	if FaketimeLib() == "" {
		testenv.Missing(t, testenv.RequireServers, "libfaketime is not installed (make deps)")
	}
	cfg := testCfg(t)
	cfg.ClockMoves = true
	l, err := New(script("clock.py"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w0, m0 := clockOf(t, l)
	real0 := float64(time.Now().UnixNano()) / 1e9
	if d := w0 - real0; d > 1 || d < -1 {
		t.Fatalf("before any skew the process's wall clock is %.3f s off the real one", d)
	}
	const skew = 30 * time.Second
	if err := l.SetClock(skew, 1); err != nil {
		t.Fatal(err)
	}
	w1, m1 := clockOf(t, l)
	real1 := float64(time.Now().UnixNano()) / 1e9
	if d := w1 - real1; d < skew.Seconds()-1 || d > skew.Seconds()+1 {
		t.Errorf("after SetClock(+%v) the process's time.time() is %.3f s ahead of the real clock, want %v", skew, d, skew)
	}
	if d := m1 - m0; d < skew.Seconds() {
		t.Errorf("after SetClock(+%v) the process's time.monotonic() moved %.3f s, want at least %v (libfaketime moves it too)", skew, d, skew)
	}
	b, err := os.ReadFile(filepath.Join(cfg.Dir, "client-3.faketime"))
	if err != nil || strings.TrimSpace(string(b)) != "+30.000000" {
		t.Errorf("clock file %q (%v), want +30.000000", b, err)
	}
	if err := l.SetClock(0, 1); err != nil {
		t.Fatalf("the heal: %v", err)
	}
	if w2, _ := clockOf(t, l); w2-float64(time.Now().UnixNano())/1e9 < skew.Seconds()-1 {
		t.Errorf("after the heal the process's clock stepped back (%.3f s ahead), want it left %v ahead", w2-float64(time.Now().UnixNano())/1e9, skew)
	}
	if log, _ := os.ReadFile(filepath.Join(cfg.Dir, "client-3.stderr")); !strings.Contains(string(log), "clock moved to 30s ahead") ||
		!strings.Contains(string(log), "stays 30s ahead") {
		t.Errorf("client-3.stderr %q: want the harness's lines on the move and on the heal that left it", log)
	}
	if err := l.SetClock(time.Minute, 2); !errors.Is(err, algorithms.ErrBroken) || !strings.Contains(err.Error(), "rate") {
		t.Errorf("SetClock at rate 2: %v, want the client broken, naming the rate", err)
	}
}

// TestSetClockUnreachable: a client whose manifest says clock: none runs without libfaketime, and
// a skew on it breaks the client, never passes for applied; one behind breaks it too.
func TestSetClockUnreachable(t *testing.T) {
	if FaketimeLib() == "" {
		testenv.Missing(t, testenv.RequireServers, "libfaketime is not installed (make deps)")
	}
	spec := script("clock.py")
	spec.NoClock = true
	cfg := testCfg(t)
	cfg.ClockMoves = true
	l, err := New(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.clock != nil || loaded(l.cmd.Process.Pid, FaketimeLib()) {
		t.Error("a clock: none client was started with libfaketime")
	}
	if err := l.SetClock(time.Second, 1); !errors.Is(err, algorithms.ErrBroken) || !strings.Contains(err.Error(), "clock: none") {
		t.Errorf("SetClock on a clock: none client: %v, want it broken, naming clock: none", err)
	}
	cfg2 := testCfg(t)
	cfg2.ClockMoves = true
	l2, err := New(script("clock.py"), cfg2)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if !loaded(l2.cmd.Process.Pid, FaketimeLib()) {
		t.Error("libfaketime is not loaded in a default client of a run with a clock fault")
	}
	if err := l2.SetClock(-time.Second, 1); !errors.Is(err, algorithms.ErrBroken) || !strings.Contains(err.Error(), "back") {
		t.Errorf("SetClock(-1s): %v, want the client broken (a step back)", err)
	}
}

// TestFaketimeOnlyWhenPlanned: libfaketime is preloaded only in a run that plans a clock fault
// (Config.ClockMoves). Preloaded, Debian's libfaketime 0.9.10 puts CLOCK_MONOTONIC on the wall
// clock's epoch and Python's timed waits never time out (threading.Event().wait(0.2) hung); so a
// run without a clock fault starts its clients on the machine's clock, and a clock fault there
// anyway breaks the client, saying why, never passes for applied.
func TestFaketimeOnlyWhenPlanned(t *testing.T) {
	if FaketimeLib() == "" {
		testenv.Missing(t, testenv.RequireServers, "libfaketime is not installed (make deps)")
	}
	l, err := New(script("clock.py"), testCfg(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.clock != nil || loaded(l.cmd.Process.Pid, FaketimeLib()) {
		t.Error("a client of a run without a clock fault was started with libfaketime")
	}
	if _, mono := clockOf(t, l); mono > 1e9 {
		t.Errorf("time.monotonic() = %.0f in a client without libfaketime, want the machine's (seconds since boot)", mono)
	}
	if err := l.SetClock(time.Second, 1); !errors.Is(err, algorithms.ErrBroken) || !strings.Contains(err.Error(), "planned no clock fault") {
		t.Errorf("SetClock on a client of a run without a clock fault: %v, want it broken, saying so", err)
	}
	// What the preload does to a Python process's timed waits, the reason for the rule above: if
	// this stops hanging, Debian's libfaketime changed, and the preload may be always again.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", "-c", "import threading; threading.Event().wait(0.2); print('returned')")
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+FaketimeLib(), "FAKETIME=+0")
	if b, err := cmd.Output(); ctx.Err() == nil {
		t.Logf("under libfaketime, Event().wait(0.2) returned (%q, %v): the preload no longer breaks timed waits", b, err)
	}
}

// TestFaketimeMovesTheJVM: libfaketime, as Start preloads it, moves a JVM's
// System.currentTimeMillis() and System.nanoTime() when the clock file changes mid-run.
func TestFaketimeMovesTheJVM(t *testing.T) {
	lib := FaketimeLib()
	java, err := exec.LookPath("java")
	if lib == "" || err != nil {
		testenv.Missing(t, testenv.RequireServers, "libfaketime or java is not installed (make deps)")
	}
	f, err := newFaketime(lib, t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := filepath.Abs(filepath.Join("testdata", "Clock.java"))
	cmd := exec.Command(java, src) // the JDK's single-file source launcher
	cmd.Env = f.env(os.Environ())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	out := bufio.NewScanner(stdout)
	read := func() (wall, nano int64) {
		t.Helper()
		if _, err := io.WriteString(stdin, "\n"); err != nil {
			t.Fatal(err)
		}
		if !out.Scan() {
			t.Fatalf("the JVM answered nothing: %v", out.Err())
		}
		if _, err := fmt.Sscanf(out.Text(), "%d %d", &wall, &nano); err != nil {
			t.Fatalf("%q: %v", out.Text(), err)
		}
		return wall, nano
	}
	w0, n0 := read()
	if err := f.write(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	w1, n1 := read()
	if d := w1 - time.Now().UnixMilli(); d < 29000 || d > 31000 {
		t.Errorf("currentTimeMillis is %d ms ahead of the real clock after +30s, want about 30000 (first reading %d)", d, w0)
	}
	if d := n1 - n0; d < 30000 {
		t.Errorf("nanoTime moved %d ms, want at least 30000 (libfaketime moves it too)", d)
	}
}
