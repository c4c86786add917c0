package process

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
)

func testCfg(t *testing.T) algorithms.Config {
	return algorithms.Config{Client: 3, Name: "lock", TTL: 500 * time.Millisecond,
		Addrs: []string{"127.0.0.1:1"}, SessionTimeout: time.Second, OpTimeout: 100 * time.Millisecond,
		Dir: t.TempDir()}
}

func script(name string) Spec {
	p, _ := filepath.Abs(filepath.Join("testdata", name))
	return Spec{Name: strings.TrimSuffix(name, filepath.Ext(name)), Command: []string{p}, Topology: "redis-single",
		Valid: true, InitTimeout: time.Second, Grace: 300 * time.Millisecond}
}

// alive reports whether a process with pid still exists (and is not a zombie we reaped).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestBadClients: each misbehaving client stops with one line naming it, the problem and its
// last stderr line, and leaves no process behind.
func TestBadClients(t *testing.T) {
	cases := []struct {
		script, problem, stderr string
		atInit                  bool
	}{
		{"exit_at_start.sh", "exited (exit status 3)", "cannot connect to the moon", true},
		{"not_json.sh", "not a JSON object", "", true},
		{"silent_init.sh", "did not answer init", "starting up, slowly", true},
		{"wrong_id.sh", "answered id 42, which it was not asked", "", false},
		{"hang.sh", "did not answer acquire", "acquiring forever", false},
	}
	for _, c := range cases {
		t.Run(c.script, func(t *testing.T) {
			cfg := testCfg(t)
			l, err := New(script(c.script), cfg)
			if !c.atInit {
				if err != nil {
					t.Fatalf("init: %v", err)
				}
				pid := l.cmd.Process.Pid
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				_, err = l.Acquire(ctx)
				cancel()
				_ = l.Close()
				if alive(pid) {
					t.Errorf("process %d survived Close", pid)
				}
			}
			if err == nil {
				t.Fatal("no error from a misbehaving client")
			}
			var be *BrokenError
			if !errors.As(err, &be) || !errors.Is(err, algorithms.ErrBroken) {
				t.Fatalf("error %v (%T) is not a BrokenError wrapping ErrBroken", err, err)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, want := range []string{strings.TrimSuffix(c.script, ".sh") + " client 3", c.problem, c.stderr} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(cfg.Dir, "client-3.stderr")); c.stderr != "" && !strings.Contains(string(b), c.stderr) {
				t.Errorf("client-3.stderr = %q, want it to keep %q", b, c.stderr)
			}
		})
	}
}

// TestProtocolMapping: ok carries fence and validity, lost makes the lease invalid, not_held is
// ErrNotHeld, info is an unknown outcome.
func TestProtocolMapping(t *testing.T) {
	l, err := New(script("fake.py"), testCfg(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	lease, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lease.Fence != 7 || lease.Validity != 400*time.Millisecond || lease.TTL != 500*time.Millisecond {
		t.Errorf("lease = %+v, want fence 7, validity 400ms, ttl 500ms", lease)
	}
	if l.Valid(lease) {
		t.Error("Valid after the client said lost: true, want false")
	}
	if err := l.Release(ctx, lease); !errors.Is(err, algorithms.ErrNotHeld) {
		t.Errorf("Release after not_held: %v, want ErrNotHeld", err)
	}
	if _, err := l.Acquire(ctx); !algorithms.IsUnknown(err) {
		t.Errorf("Acquire answered info: %v, want an unknown outcome", err)
	}
	if l.Name() != "fake" {
		t.Errorf("Name = %q, want fake", l.Name())
	}
}

// state returns the process state letter from /proc/pid/stat ("T" when stopped).
func state(t *testing.T, pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "gone"
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[0]
}

// TestPauseResumeKill: Pause stops the whole process (SIGSTOP), Resume continues it, Kill ends
// it without the client counting as broken.
func TestPauseResumeKill(t *testing.T) {
	l, err := New(script("fake.py"), testCfg(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pid := l.cmd.Process.Pid
	if err := l.Pause(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && state(t, pid) != "T"; i++ { // the signal is delivered asynchronously
		time.Sleep(10 * time.Millisecond)
	}
	if s := state(t, pid); s != "T" {
		t.Errorf("paused process state %q, want T (stopped)", s)
	}
	if err := l.Resume(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if s := state(t, pid); s == "T" {
		t.Errorf("resumed process still stopped")
	}
	if err := l.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := l.Acquire(context.Background()); errors.Is(err, algorithms.ErrBroken) || err == nil {
		t.Errorf("Acquire after Kill: %v, want the killed error, not a broken client", err)
	}
}
