package s3_test

import "syscall"

// sysProcAttr makes the kernel kill the MinIO child if the test binary dies
// without running its cleanup (a panic or a -timeout abort), so no orphaned
// server keeps running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
