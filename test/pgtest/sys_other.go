//go:build !unix

package pgtest

import (
	"os"
	"syscall"
)

func procAttr() *syscall.SysProcAttr { return nil }

func terminate(p *os.Process) error { return p.Kill() }

func kill(p *os.Process) error { return p.Kill() }

// lockFile does not lock: the PGlite install is serialised only on Unix.
func lockFile(string) (func(), error) { return func() {}, nil }
