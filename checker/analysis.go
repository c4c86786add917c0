package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lockchaos/lockchaos/history"
)

// Analysis is everything the checker concluded about a run, in the shapes reports draw: the
// holding windows the exclusion check used, the leases the lock check assumed, every violation
// with its cause, and the evidence. Reports and the CLI render it; they never recompute it.
type Analysis struct {
	Holds      []Hold
	Leases     []Lease
	Violations []Violation
	// Danger is the danger window of each fault that attacked the lock, in ns.
	Danger [][2]int64
}

// Hold is one acquisition's holding window (docs/design.md#checks), in ns since the run's start.
type Hold struct {
	Acq    int64 // the acquire's id
	Client int
	Lock   string
	// Call is the acquire's invocation; Grant its return (for an acquire of unknown outcome that
	// still touched the resource: its first access).
	Call, Grant int64
	// End is the return of the last access under it (Grant when there was none).
	End int64
	// LastAccess is the id of the access that ends the window, 0 when there was none.
	LastAccess int64
	// Expiry is when the holder's own validity ran out (Call + validity_ns), 0 when it has none.
	Expiry int64
	Fence  uint64
}

// Lease is the lease the lock service gave an acquisition, as the lock check assumes it: from
// when the winning attempt was sent, until it could first have expired (TTL·(1−drift) later)
// or its holder began releasing it, whichever is first. End is history.Never for a lease without
// TTL that was never released.
type Lease struct {
	Acq        int64
	Client     int
	Start, End int64
	// Released is true when End is the release's invocation rather than the expiry.
	Released bool
}

// holds returns the holding windows, in grant order.
func (r *run) holds(ws []window) []Hold {
	out := make([]Hold, 0, len(ws))
	for _, w := range ws {
		a := &r.ops[w.acq]
		h := Hold{Acq: a.ID, Client: a.Client, Lock: a.Lock, Call: a.Call, Grant: w.start, End: w.end, Fence: a.Fence}
		if w.last >= 0 {
			h.LastAccess = r.ops[w.last].ID
		}
		if a.ValidityNs > 0 {
			h.Expiry = a.Call + a.ValidityNs
		}
		out = append(out, h)
	}
	slices.SortFunc(out, func(x, y Hold) int { return int(x.Grant - y.Grant) })
	return out
}

// leases returns the lease of every successful acquire.
func (r *run) leases() []Lease {
	rel := r.releaseCalls()
	var out []Lease
	for i := range r.ops {
		a := &r.ops[i]
		if a.Op != history.OpAcquire || !a.Ok() {
			continue
		}
		l := Lease{Acq: a.ID, Client: a.Client, Start: a.Sent, End: history.Never}
		if t := r.ttl(a); t > 0 {
			l.End = a.Sent + t
		}
		if t, ok := rel[i]; ok && t < l.End {
			l.End, l.Released = t, true
		}
		out = append(out, l)
	}
	return out
}

// releaseCalls maps an acquire's index to the earliest invocation of an ok or unknown release
// of it.
func (r *run) releaseCalls() map[int]int64 {
	rel := make(map[int]int64)
	for i := range r.ops {
		o := &r.ops[i]
		if o.Op != history.OpRelease || o.Status == history.TypeFail {
			continue
		}
		if j, ok := r.acquireOf(o); ok {
			if t, seen := rel[j]; !seen || o.Call < t {
				rel[j] = o.Call
			}
		}
	}
	return rel
}

// serviceCause names what let the service grant b while a's lease was valid: a fault on the
// servers between a's grant and b's, a fault on b's client's clock while it acquired, or a
// release by a third acquisition in between (the late DEL of seed 003's table). It says so when
// nothing in the history explains it. Faults are told apart by what their lines say they act on.
func (r *run) serviceCause(a, b *history.Operation) string {
	for i := range r.faults {
		f := &r.faults[i]
		if f.Error != "" || f.Arm {
			continue
		}
		switch f.ActsOn {
		case history.ActsOnServers:
			if f.Start >= a.Sent && f.Start <= b.Return {
				return fmt.Sprintf("%s of %s at %s", f.Name, f.Target, history.FormatNs(f.Start))
			}
		case history.ActsOnClock:
			if f.Start <= b.Return && f.End > b.Sent && slices.Contains(f.TargetClients, b.Client) {
				return fmt.Sprintf("client %d's clock was skewed (%s) when it took the lock over", b.Client, f.Detail)
			}
		}
	}
	// A release by another acquisition that reached the service while a held: its DEL removed
	// a's key. One that completed inside [a's grant, b's grant] certainly landed there (the latest
	// is named); one whose outcome is unknown may have landed at any time after it was sent.
	var done, pending *history.Operation
	for i := range r.ops {
		o := &r.ops[i]
		if o.Op != history.OpRelease || o.Status == history.TypeFail || o.Acq == a.ID || o.Acq == b.ID || o.Call > b.Return {
			continue
		}
		switch {
		case o.Status == history.TypeInfo:
			if pending == nil || o.Call > pending.Call {
				pending = o
			}
		case o.Done >= a.Return:
			if done == nil || o.Call > done.Call {
				done = o
			}
		}
	}
	if done != nil {
		late := ""
		if j, ok := r.idx.get(done.Acq); ok {
			if ttl := r.ttl(&r.ops[j]); ttl > 0 && done.Call > r.ops[j].Sent+ttl {
				late = "late "
			}
		}
		if w := r.reached(done, a, b); w != nil {
			return fmt.Sprintf("client %d's %srelease (op %d, of its acq %d), invoked at %s: its %s reached %s at %s, after client %d was granted at %s, and removed client %d's key",
				done.Client, late, done.ID, done.Acq, history.FormatNs(done.Call), w.Text, w.Node, history.FormatNs(w.At), a.Client, history.FormatNs(a.Return), a.Client)
		}
		return fmt.Sprintf("client %d's %srelease (op %d, of its acq %d), invoked at %s and answered at %s, removed client %d's key",
			done.Client, late, done.ID, done.Acq, history.FormatNs(done.Call), history.FormatNs(done.Done), a.Client)
	}
	if pending != nil {
		if w := r.reached(pending, a, b); w != nil {
			return fmt.Sprintf("client %d's release (op %d, of its acq %d), sent at %s and never answered in time: its %s reached %s at %s, after client %d was granted at %s, and removed client %d's key",
				pending.Client, pending.ID, pending.Acq, history.FormatNs(pending.Call), w.Text, w.Node, history.FormatNs(w.At), a.Client, history.FormatNs(a.Return), a.Client)
		}
		return fmt.Sprintf("client %d's release (op %d, of its acq %d), sent at %s and never answered in time, can have landed late and removed client %d's key (inferred: no wire record shows when it arrived)",
			pending.Client, pending.ID, pending.Acq, history.FormatNs(pending.Call), a.Client)
	}
	if why := r.idleCause(a, b); why != "" {
		return why
	}
	if a.Client != b.Client {
		return fmt.Sprintf("no fault or release in the history explains it: the service handed client %d's lock to client %d on its own", a.Client, b.Client)
	}
	return "no fault or release in the history explains it"
}

// idleCause names the server's session idle timeout when a's client had recorded no operation
// for at least that long before b was granted: the server may have ended its session, and the
// session lock with it. "" when the run set no idle timeout or the holder was not idle so long.
func (r *run) idleCause(a, b *history.Operation) string {
	limit := r.meta.ServerIdleTimeoutNs
	if limit <= 0 || a.Client == b.Client {
		return ""
	}
	last := a.Return
	for i := range r.ops {
		if o := &r.ops[i]; o.Client == a.Client && o.Call <= b.Return {
			last = max(last, min(o.Done, b.Return))
		}
	}
	if b.Return-last < limit {
		return ""
	}
	return fmt.Sprintf("the server ends sessions idle for %s: client %d had recorded no operation since %s, %s before client %d was granted, so its session, and the lock with it, may have been ended",
		history.FormatNs(limit), a.Client, history.FormatNs(last), history.FormatNs(b.Return-last), b.Client)
}

// reached returns the last request of release o that the wire lines show reaching a server after
// a was granted and before b was: the command that removed a's key (docs/design.md#wire-points). Nil when the
// run's links were not parsed, or no such request was seen.
func (r *run) reached(o, a, b *history.Operation) *history.WireLine {
	end := min(o.Done, b.Return)
	var last *history.WireLine
	for i := range r.wire {
		w := &r.wire[i]
		if w.At > end {
			break
		}
		if !w.Reply && w.Client == o.Client && w.At >= o.Call && w.At >= a.Return {
			last = w
		}
	}
	return last
}

// releaseWire is what of wire reached can return for ops: the requests each release sent while
// under way (between its invocation and completion), in wire's order. A segment keeps only these:
// a parsed run has many a wire line per operation, and the segments in flight would hold them all.
func releaseWire(ops []history.Operation, wire []history.WireLine) []history.WireLine {
	// client → its releases by Call (ops are in invocation order): [Call, the latest Done of
	// those invoked so far].
	under := map[int][][2]int64{}
	for i := range ops {
		if o := &ops[i]; o.Op == history.OpRelease {
			s := under[o.Client]
			done := o.Done
			if len(s) > 0 {
				done = max(done, s[len(s)-1][1])
			}
			under[o.Client] = append(s, [2]int64{o.Call, done})
		}
	}
	var kept []history.WireLine
	for i := range wire {
		w := &wire[i]
		if w.Reply {
			continue
		}
		s := under[w.Client]
		j, _ := slices.BinarySearchFunc(s, w.At, func(x [2]int64, t int64) int { return cmp.Compare(x[0], t+1) })
		if j > 0 && w.At <= s[j-1][1] { // some release invoked by then was still under way
			kept = append(kept, *w)
		}
	}
	return kept
}

// clientCause names how the old holder of an overlap came to use an expired lease: its late
// access, and the fault that held it (a pause, a partition) if one did.
func (r *run) clientCause(a *history.Operation, aEnd int) string {
	if aEnd < 0 {
		return fmt.Sprintf("client %d kept using acq %d", a.Client, a.ID)
	}
	e := &r.ops[aEnd]
	s := fmt.Sprintf("client %d's %s (op %d) at %s", a.Client, e.Op, e.ID, history.FormatNs(e.Call))
	if a.ValidityNs > 0 {
		exp := a.Call + a.ValidityNs
		if e.Call > exp {
			s += fmt.Sprintf(" came %s after its own validity ended at %s", history.FormatNs(e.Call-exp), history.FormatNs(exp))
		}
	} else if t := r.ttl(a); t > 0 && e.Call > a.Sent+t {
		s += fmt.Sprintf(" came %s after its lease could have expired at %s", history.FormatNs(e.Call-a.Sent-t), history.FormatNs(a.Sent+t))
	}
	if f := r.faultDuring(a.Client, a.Return, e.Call); f != nil {
		s += fmt.Sprintf(", after a %s from %s", f.Name, history.FormatNs(f.Start))
		s += faultEnd(f)
	}
	return s
}

// faultDuring returns the first fault that took effect, targets client and started in [from, to].
func (r *run) faultDuring(client int, from, to int64) *history.FaultSpan {
	for i := range r.faults {
		f := &r.faults[i]
		if f.Error == "" && f.Start >= from && f.Start <= to && slices.Contains(f.TargetClients, client) {
			return f
		}
	}
	return nil
}

// faultEnd says when f ended, for a cause ("" when it never did).
func faultEnd(f *history.FaultSpan) string {
	if f.End == history.Never {
		return ""
	}
	return fmt.Sprintf(" to %s", history.FormatNs(f.End))
}

// expiredWrite reports whether write w (under acquire a) was invoked after a's own validity had
// ended: the holder used a lease it could know was over.
func expiredWrite(a, w *history.Operation) bool {
	return w.Op == history.OpWrite && a.ValidityNs > 0 && w.Call > a.Call+a.ValidityNs
}

// fenceRegressions counts accepted writes whose fence did not go forward: lower than the highest
// accepted before, or equal to it under another client's acquisition (two holders given one
// fence). The same client given its own fence again, with no higher fence accepted between, is
// one holder all along: etcd's Mutex returns the key its session still has when a release
// failed, and the resource cannot mistake one client's writes for another's. It returns the
// first as a violation.
func (r *run) fenceRegressions() (int, *Violation) {
	c, first := r.fencesFrom(fenceCarry{})
	return c.regressions, first
}

// fenceCarry is fenceRegressions' state at the end of a segment: the highest fence accepted
// (a copy of its write) and the regressions so far.
type fenceCarry struct {
	top         *history.Operation
	regressions int
}

// fencesFrom is fenceRegressions on a segment of the history, from the previous segment's state.
func (r *run) fencesFrom(c fenceCarry) (fenceCarry, *Violation) {
	var ws []int
	for i := range r.ops {
		if o := &r.ops[i]; o.Op == history.OpWrite && o.Ok() && o.Fence > 0 {
			ws = append(ws, i)
		}
	}
	slices.SortStableFunc(ws, func(x, y int) int { return int(r.ops[x].Call - r.ops[y].Call) })
	var first *Violation
	p := c.top // the write with the highest fence
	for _, i := range ws {
		o := &r.ops[i]
		if p != nil && (o.Fence < p.Fence || (o.Fence == p.Fence && o.Acq != p.Acq && o.Client != p.Client)) {
			if c.regressions == 0 {
				first = &Violation{Kind: "fence-regression", Class: ServiceClass, AtMs: ms(o.Call), A: ref(p), B: ref(o),
					Explanation: fmt.Sprintf("client %d's write was accepted with fence %d after client %d's write with fence %d: fences did not go forward, so the resource could not tell the stale holder",
						o.Client, o.Fence, p.Client, p.Fence)}
			}
			c.regressions++
			continue
		}
		p = o
	}
	if p != c.top {
		top := *p // the segment's operations go when it is done
		c.top = &top
	}
	return c, first
}
