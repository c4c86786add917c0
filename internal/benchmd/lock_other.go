//go:build !unix

package benchmd

// lock is a no-op where flock is not available: updates are then last-writer-wins.
func lock(string) (func(), error) { return func() {}, nil }
