package jobrun

// RunGoroutines counts the engine's run goroutines: all of them, and those
// waiting for the next run.
func (e *Engine) RunGoroutines() (live, idle int) {
	return int(e.runners.live.Load()), int(e.runners.idle.Load())
}
