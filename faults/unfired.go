package faults

import (
	"fmt"

	"github.com/lockchaos/lockchaos/history"
)

// Unfired is a planned fault that never took effect, and why.
type Unfired struct {
	Rule   int // 1-based index of the spec
	Kind   string
	Point  string
	Reason string
}

// Unfired lists the faults that never took effect. Call it after HealAll: no fault starts after
// that, so the list is final. A fault whose injection is still under way (a restart that outlasts
// the fault phase) is not listed: its start line, written when the injection returns, tells
// whether it took effect, and with what error if not.
func (n *Nemesis) Unfired() []Unfired {
	n.mu.Lock()
	early := n.early
	n.mu.Unlock()
	var out []Unfired
	for _, r := range n.rules {
		r.mu.Lock()
		injected, injecting, seen, lastErr := r.injected, r.injecting, r.seen, r.lastErr
		r.mu.Unlock()
		if injected > 0 || injecting > 0 {
			continue
		}
		reason := r.reason(seen, lastErr)
		if early && lastErr == "" {
			reason = "the run stopped once its verdict was decided, before it fired (" + reason + ")"
		}
		out = append(out, Unfired{Rule: r.index, Kind: r.spec.Kind, Point: r.spec.Point, Reason: reason})
	}
	return out
}

func (r *rule) reason(seen int, lastErr string) string {
	s := r.spec
	switch {
	case lastErr != "":
		return "it could not be injected: " + lastErr
	case s.Wire != nil && s.Point == "" && seen <= s.Skip:
		return fmt.Sprintf("its wire point (%s) was matched %d times, all skipped (skip %d)", s.Wire, seen, s.Skip)
	case s.Wire != nil && s.Point == "":
		return fmt.Sprintf("its wire point (%s) was matched %d times but the fault phase had ended", s.Wire, seen)
	case s.Wire != nil && seen > s.Skip:
		return fmt.Sprintf("its point %s was reached %d times, but no command matched its wire point (%s) after it", s.Point, seen, s.Wire)
	case s.Point == "":
		return fmt.Sprintf("its time (%s) was not reached before the fault phase ended", s.At)
	case seen == 0 && s.Client != 0:
		return fmt.Sprintf("client %d never reached its point %s", s.Client, s.Point)
	case seen == 0:
		return fmt.Sprintf("no client reached its point %s", s.Point)
	case seen <= s.Skip:
		return fmt.Sprintf("its point %s was reached %d times, all skipped (skip %d)", s.Point, seen, s.Skip)
	default:
		return fmt.Sprintf("its point %s was reached %d times but the fault phase had ended", s.Point, seen)
	}
}

// RecordUnfired writes one history line for each fault that never took effect, so a check of the
// history alone knows why (docs/design.md#evidence). Call it after HealAll.
func (n *Nemesis) RecordUnfired() {
	for _, u := range n.Unfired() {
		n.record(history.Event{Phase: history.PhaseUnfired, Rule: u.Rule, Name: u.Kind, Point: u.Point, Detail: u.Reason})
	}
}
