//go:build !linux

package testenv

import "syscall"

// sysProcAttr has no parent-death signal outside Linux; Stop ends the
// server on normal exits.
func sysProcAttr() *syscall.SysProcAttr { return nil }
