package algorithms

import "context"

// attemptKey carries the attempt hook in an Acquire's context.
type attemptKey struct{}

// WithAttemptHook returns a context whose Acquire calls hook right before it sends each attempt
// that may win the lock (each SET NX of a retry loop, each Redlock round, each check of a
// ZooKeeper lock's children). The harness uses it to record when the winning attempt was sent
// (history sent_ns), so the checker places a grant in [that send, the return] instead of anywhere
// in a long retry loop. Like net/http/httptrace, the hook travels in the context, so a Locker
// that never calls MarkAttempt still works: its grant is then bounded by Acquire's call only.
func WithAttemptHook(ctx context.Context, hook func()) context.Context {
	return context.WithValue(ctx, attemptKey{}, hook)
}

// MarkAttempt tells the harness that an attempt is about to be sent: call it before each attempt
// that may take the lock. Call it only when no earlier attempt may still take effect (a timed-out
// SET whose outcome is unknown), since the grant may then come from that earlier one.
func MarkAttempt(ctx context.Context) {
	if hook, ok := ctx.Value(attemptKey{}).(func()); ok && hook != nil {
		hook()
	}
}
