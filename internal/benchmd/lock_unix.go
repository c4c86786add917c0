//go:build unix

package benchmd

import (
	"os"
	"syscall"
)

// lock takes an exclusive flock on path, so two benchmark processes updating the same file do
// not lose each other's sections.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close() // the file stays: removing it would let a waiter lock a stale inode
	}, nil
}
