package algorithms

import (
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"
)

// UnknownError says a request that may change the lock's state was sent and its outcome is not
// known (a timeout or a broken connection after the write left, or the client stopped at a point
// after its lock write succeeded). The harness records such an operation as info, not fail.
type UnknownError struct {
	// Op names the step, e.g. "SET NX".
	Op  string
	Err error
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("lockchaos: outcome of %s unknown: %v", e.Op, e.Err)
}

func (e *UnknownError) Unwrap() error { return e.Err }

// IsUnknown reports whether err leaves the operation's outcome unknown (an *UnknownError in its
// chain). Every other error from Acquire or Release means the operation definitely did not take
// effect; ErrNotHeld and ErrGaveUp are definite.
func IsUnknown(err error) bool {
	var u *UnknownError
	return errors.As(err, &u)
}

// redisWriteErr classifies the error of a Redis command that may change the server's state: a
// reply from the server (an error reply, a refused dial, a closed client) is definite, anything
// else (timeout, reset, EOF) may have hit the server and is unknown.
func redisWriteErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if redisDefinite(err) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return &UnknownError{Op: op, Err: err}
}

// redisReadErr wraps the error of a command that changes nothing: always definite.
func redisReadErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, err)
}

func redisDefinite(err error) bool {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return true // the server answered, with an error
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true // never connected, nothing sent
	}
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed)
}

// stoppedHolding is the error for a Point that stopped the client after its lock write
// succeeded: the server holds the lock for it, so the acquire's outcome is not a failure.
func stoppedHolding(point string, err error) error {
	return &UnknownError{Op: "acquire (stopped at " + point + " after the lock write)", Err: err}
}

// stopped wraps the error of a Point that stopped the client before anything took effect.
func stopped(point string, err error) error {
	return fmt.Errorf("stopped at %s: %w", point, err)
}
