//go:build !linux

package postgres

import "syscall"

// setUserTimeout does nothing where TCP_USER_TIMEOUT is not available;
// keepalive still finds idle connections' peers gone.
func setUserTimeout(string, string, syscall.RawConn) error { return nil }
