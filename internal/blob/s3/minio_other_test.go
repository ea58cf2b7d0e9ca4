//go:build !linux

package s3_test

import "syscall"

// sysProcAttr has no parent-death signal outside Linux; TestMain's cleanup
// stops the server on normal exits.
func sysProcAttr() *syscall.SysProcAttr { return nil }
