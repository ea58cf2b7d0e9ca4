//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package local

import "os"

// lockDir only creates the lock file where flock is unavailable: there the
// one-process-per-directory rule is the operator's to keep.
func lockDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
}

// unlockDir closes the lock file.
func unlockDir(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close()
}
