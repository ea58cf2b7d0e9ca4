package testenv

import "syscall"

// sysProcAttr makes the kernel kill a server child if the test binary dies
// without running its cleanup (a panic or a -timeout abort).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
