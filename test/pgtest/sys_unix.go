//go:build unix

package pgtest

import (
	"os"
	"syscall"
)

// terminate asks the process group of p (started with Setpgid) to stop.
func terminate(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGTERM) }

// kill ends the process group of p.
func kill(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGKILL) }

// lockFile takes an exclusive lock on path, waiting for it.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
