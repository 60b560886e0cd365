package job

// Common is the reference product's common block, which every event of a
// run carries: job_type, status, is_paused, the model counters, the current
// attempt and the batch counters (Tracker.Stamp). It is kept apart from the
// event's payload; the wire form writes the two as one object, the
// payload's fields winning (ports.EventCodec).
type Common struct {
	JobType string
	// Status is the job's status as of the event; is_paused is written from
	// it (paused).
	Status                       State
	TotalModels, CompletedModels int
	// RunningModels is the tracker's list as it was: never changed after.
	RunningModels []string
	// CurrentModel and LastError are null when empty.
	CurrentModel                string
	CurrentAttempt, MaxAttempts int
	LastError                   string
	// TotalEntities is null while unknown (negative).
	TotalEntities                                      int
	CompletedEntities, FailedEntities, SkippedEntities int
}
