package reports

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/lockchaos/lockchaos/internal/lcerr"
)

// ErrNotLoopback is returned for an address that would expose reports beyond this machine.
var ErrNotLoopback = lcerr.New("reports: serve only binds loopback addresses (127.0.0.1, ::1, localhost)")

// Listen opens a TCP listener on addr after checking it is a loopback address: reports carry
// command lines and hostnames and are not meant for the network.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("reports: serve address %q: %w (use e.g. 127.0.0.1:8080)", addr, err)
	}
	if !isLoopback(host) {
		return nil, fmt.Errorf("%w: %q; use e.g. 127.0.0.1:8080", ErrNotLoopback, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	return ln, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves the report directory dir over HTTP on the loopback address addr until ctx ends,
// then shuts down and returns nil. A non-loopback addr is refused with ErrNotLoopback.
func Serve(ctx context.Context, dir, addr string) error {
	ln, err := Listen(addr)
	if err != nil {
		return err
	}
	return ServeListener(ctx, dir, ln)
}

// ServeListener serves dir on ln (for callers that want to print the chosen port first) until ctx
// ends. It closes ln.
func ServeListener(ctx context.Context, dir string, ln net.Listener) error {
	srv := &http.Server{
		Handler:           http.FileServer(http.Dir(dir)),
		ReadHeaderTimeout: 10 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("reports: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("reports: shutdown: %w", err)
	}
	<-errc
	return nil
}
