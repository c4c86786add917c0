// Package testkit holds test helpers that both cluster's own tests and a backend package's tests
// use. It imports nothing of cluster, so that cluster's in-package tests may import it.
package testkit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// CtxT returns a context that ends after d or with the test.
func CtxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// RedisClient is a RESP2 client of addr with every timeout set to timeout and no retries, closed
// with the test.
func RedisClient(t *testing.T, addr string, timeout time.Duration) *redis.Client {
	t.Helper()
	rc := redis.NewClient(&redis.Options{
		Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, PoolSize: 2,
	})
	t.Cleanup(func() { rc.Close() })
	return rc
}

// OwnProxies checks that two clients reach the Redis node at node through proxies of their own
// (c1 and c2, neither the node's address) that carry commands both ways: a SET through c1 is read
// through c2. It returns the clients, 300 ms timeouts, closed with the test.
func OwnProxies(t *testing.T, ctx context.Context, node, c1, c2 string) (r1, r2 *redis.Client) {
	t.Helper()
	if c1 == node || c1 == c2 {
		t.Fatalf("clients must get their own proxies: node %s, c1 %v, c2 %v", node, c1, c2)
	}
	r1 = RedisClient(t, c1, 300*time.Millisecond)
	r2 = RedisClient(t, c2, 300*time.Millisecond)
	if err := r1.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through proxy: %v", err)
	}
	if v, err := r2.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET through client 2's proxy = %q, %v", v, err)
	}
	return r1, r2
}

// SavedLogs saves a cluster's server logs (save: its SaveLogs) into a fresh directory and checks
// that each named node's log holds the given lines, in order (a line named twice must be there
// twice). It returns the logs of nodes, by name.
func SavedLogs(t *testing.T, save func(dir string) error, nodes []string, want map[string][]string) map[string]string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "servers")
	if err := save(dir); err != nil {
		t.Fatalf("SaveLogs: %v", err)
	}
	logs := map[string]string{}
	for _, n := range nodes {
		b, err := os.ReadFile(filepath.Join(dir, n+".log"))
		if err != nil {
			t.Errorf("saved log of %s: %v", n, err)
		}
		logs[n] = string(b)
	}
	for node, lines := range want {
		rest := logs[node]
		for _, l := range lines {
			i := strings.Index(rest, l)
			if i < 0 {
				t.Errorf("saved log of %s (%d bytes) lacks %q (once more)", node, len(logs[node]), l)
				break
			}
			rest = rest[i+len(l):]
		}
	}
	return logs
}

// PromotedBySome checks that one of the sentinels' logs tells the promotion: the leader logs it
// before it names the new master to anyone, while the others may learn it only seconds later.
func PromotedBySome(t *testing.T, logs map[string]string) {
	t.Helper()
	for _, s := range []string{"sentinel-1", "sentinel-2", "sentinel-3"} {
		if strings.Contains(logs[s], "+promoted-slave") {
			return
		}
	}
	t.Errorf("no sentinel's saved log says +promoted-slave")
}

// SyncBuffer is a bytes.Buffer safe for the cluster's watcher goroutines.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// KilledHelper runs the test binary again for its test named test (a helper that starts a
// cluster, prints "READY <what>" and never closes it), with env added, waits up to timeout for its
// READY line, calls before (if not nil) with what it printed after READY, SIGKILLs it — a harness
// killed without a chance to clean up — and returns what it printed.
func KilledHelper(t *testing.T, test string, env []string, timeout time.Duration, before func(ready string)) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := readLine(out, timeout)
	if err != nil || !strings.HasPrefix(line, "READY ") {
		t.Fatalf("helper: %q, %v", line, err)
	}
	ready := strings.TrimPrefix(line, "READY ")
	if before != nil {
		before(ready)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return ready
}

// readLine returns a helper process's first READY or ERROR line.
func readLine(r io.Reader, timeout time.Duration) (string, error) {
	ch := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		s := bufio.NewScanner(r)
		for s.Scan() {
			if l := s.Text(); strings.HasPrefix(l, "READY ") || strings.HasPrefix(l, "ERROR ") {
				ch <- l
				return
			}
		}
		errc <- fmt.Errorf("helper ended without READY: %v", s.Err())
	}()
	select {
	case l := <-ch:
		return l, nil
	case err := <-errc:
		return "", err
	case <-time.After(timeout):
		return "", fmt.Errorf("no READY after %v", timeout)
	}
}
