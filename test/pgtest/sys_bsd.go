//go:build unix && !linux

package pgtest

import "syscall"

// procAttr puts the server in its own process group, stopped as a whole.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
