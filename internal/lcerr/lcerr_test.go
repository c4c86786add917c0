package lcerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestNew(t *testing.T) {
	a, b := New("lockchaos: a"), New("lockchaos: b")
	wrapped := fmt.Errorf("start: %w", fmt.Errorf("%w: redis-server not found", a))
	if !errors.Is(wrapped, ErrBadInput) || !errors.Is(wrapped, a) {
		t.Errorf("%v: want it to be bad input and a", wrapped)
	}
	if errors.Is(wrapped, b) {
		t.Errorf("%v: is b too", wrapped)
	}
	if errors.Is(errors.New("lockchaos: a"), ErrBadInput) {
		t.Error("an error not made with New is bad input")
	}
	if a.Error() != "lockchaos: a" {
		t.Errorf("text %q", a.Error())
	}
}
