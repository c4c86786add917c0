package algorithms

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestRedisWriteErr(t *testing.T) {
	for _, c := range []struct {
		name    string
		err     error
		unknown bool
	}{
		{"nil", nil, false},
		{"error reply", fmt.Errorf("wrapped: %w", redisReply("READONLY You can't write against a read only replica.")), false},
		{"refused dial", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, false},
		{"pool timeout", redis.ErrPoolTimeout, false},
		{"closed client", redis.ErrClosed, false},
		{"read timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}, true},
		{"ctx deadline", context.DeadlineExceeded, true},
	} {
		err := redisWriteErr("SET NX PX", c.err)
		if (err == nil) != (c.err == nil) || IsUnknown(err) != c.unknown {
			t.Errorf("%s: redisWriteErr = %v, IsUnknown %v, want unknown %v", c.name, err, IsUnknown(err), c.unknown)
		}
		if c.err != nil && !errors.Is(err, c.err) {
			t.Errorf("%s: %v does not wrap the cause", c.name, err)
		}
		if IsUnknown(redisReadErr("GET", c.err)) {
			t.Errorf("%s: a read error is unknown", c.name)
		}
	}
	if IsUnknown(ErrNotHeld) || IsUnknown(ErrGaveUp) || IsUnknown(nil) {
		t.Error("the sentinels are definite")
	}
	if !IsUnknown(fmt.Errorf("acquire: %w", stoppedHolding("acquire:after-setnx", context.Canceled))) {
		t.Error("a stop after the lock write is unknown")
	}
}

// redisReply is an error reply as go-redis returns it.
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}

func TestRegistry(t *testing.T) {
	want := []string{"getset", "redlock", "setnx", "setnx-expire", "setnx-px", "token", "zookeeper"}
	for _, n := range want {
		if !slices.Contains(Names(), n) {
			t.Errorf("%s is not registered (have %v)", n, Names())
		}
	}
	for _, info := range All() {
		if !slices.Contains(want, info.Name) {
			continue
		}
		if info.Summary == "" || info.Source == "" || len(info.Topologies) == 0 || len(info.Points) == 0 || info.New == nil {
			t.Errorf("%s: incomplete Info %+v", info.Name, info)
		}
		if info.Fenced {
			t.Errorf("%s claims a fencing token; the seven seed algorithms have none", info.Name)
		}
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("Lookup of an unknown name succeeded")
	}
}
