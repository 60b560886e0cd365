package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// echoing says whether the terminal behind the pty master f echoes what is
// typed (on Linux the master reports the terminal's settings).
func echoing(f *os.File) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var on bool
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		var t *unix.Termios
		if t, ierr = unix.IoctlGetTermios(int(fd), unix.TCGETS); ierr == nil {
			on = t.Lflag&unix.ECHO != 0
		}
	}); err != nil {
		return false, err
	}
	return on, ierr
}
