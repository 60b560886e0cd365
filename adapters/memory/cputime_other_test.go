//go:build !unix

package memory_test

// cpuTime is 0 where the process's CPU time is not read.
func cpuTime() int64 { return 0 }
