//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package local

import (
	"os"
	"syscall"
)

// lockDir takes an exclusive, non-blocking flock on path, so a second
// process (or a second Open in this one) cannot corrupt the store.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// unlockDir releases the lock taken by lockDir.
func unlockDir(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close() // closing the descriptor releases the flock
}
