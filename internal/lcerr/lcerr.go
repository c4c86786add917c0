// Package lcerr is lockchaos's error vocabulary: the one sentinel, ErrBadInput, that every error
// whose fix is on the user's side wraps (a bad flag or file, a missing server, a corrupt history,
// an unusable process client), so the CLI maps them all to exit 254 with one errors.Is. Each
// package keeps its own sentinels (cluster.ErrBadSpec, history.ErrCorrupt, ...), made with New.
// It imports nothing, so every package may use it, history included.
package lcerr

import "errors"

// ErrBadInput is wrapped by every bad-input sentinel made with New.
var ErrBadInput = errors.New("lockchaos: bad input")

// New returns a sentinel error with text msg that is bad input: errors.Is(err, ErrBadInput) holds
// for it and for every error that wraps it, and errors.Is(err, itself) as for any sentinel.
func New(msg string) error { return &badInput{msg} }

type badInput struct{ msg string }

func (e *badInput) Error() string { return e.msg }

// Is makes the sentinel match ErrBadInput, besides itself (errors.Is compares identity first).
func (e *badInput) Is(target error) bool { return target == ErrBadInput }
