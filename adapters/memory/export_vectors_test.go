package memory

// SetParallelScan makes lookups split their scan from n vectors on, until
// the returned function restores the threshold.
func SetParallelScan(n int) (restore func()) {
	was := parallelScan
	parallelScan = n
	return func() { parallelScan = was }
}
