//go:build linux

package pgtest

import "syscall"

// procAttr puts the server in its own process group (stopped as a whole) and
// has the kernel kill it if the test binary dies without running Main's
// cleanup (a panic, a -timeout, a kill).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
