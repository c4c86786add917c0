package reports

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServeRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{":8080", "0.0.0.0:8080", "192.0.2.1:80", "[::]:80", "example.com:80", "nonsense"} {
		err := Serve(context.Background(), t.TempDir(), addr)
		if err == nil {
			t.Errorf("Serve(%q) succeeded", addr)
			continue
		}
		if addr != "nonsense" && !errors.Is(err, ErrNotLoopback) {
			t.Errorf("Serve(%q) = %v, want ErrNotLoopback", addr, err)
		}
	}
}

func TestServeLoopback(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("<p>hello</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeListener(ctx, dir, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/index.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "hello") {
		t.Errorf("served %q", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeListener after cancel = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeListener did not return after cancel")
	}
}
