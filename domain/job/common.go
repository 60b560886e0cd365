package job

import "strconv"

// Common is the reference product's common block, which every event
// carries: job_type, status, is_paused, the model counters, the current
// attempt and the batch counters (Tracker.Stamp). An event built in this
// process keeps it here, apart from its own fields (Data), and the
// encoders write the two as one object, the event's fields winning; an
// event read back from a log has it inside Data and Common nil. Fields
// gives the merged map to a reader that needs the whole object. A stamped
// event used to copy its fields and the block into one new map, the
// largest allocation of a job's events; Common is one small struct.
type Common struct {
	JobType                      string
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

// commonKeys are the block's fields, in the order MarshalData sorts keys.
var commonKeys = [...]string{"completed_entities", "completed_models", "current_attempt", "current_model",
	"failed_entities", "is_paused", "job_type", "last_error_summary", "max_attempts", "running_models",
	"skipped_entities", "status", "total_entities", "total_models"}

// number is the block's field i when it is a plain count.
func (c *Common) number(i int) (int, bool) {
	switch i {
	case 0:
		return c.CompletedEntities, true
	case 1:
		return c.CompletedModels, true
	case 2:
		return c.CurrentAttempt, true
	case 4:
		return c.FailedEntities, true
	case 8:
		return c.MaxAttempts, true
	case 10:
		return c.SkippedEntities, true
	case 13:
		return c.TotalModels, true
	}
	return 0, false
}

// value is the block's field i (commonKeys' order) as a map holds it.
func (c *Common) value(i int) any {
	if n, ok := c.number(i); ok {
		return n
	}
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	switch i {
	case 3:
		return nullable(c.CurrentModel)
	case 5:
		return c.Status == Paused
	case 6:
		return c.JobType
	case 7:
		return nullable(c.LastError)
	case 9:
		if c.RunningModels == nil {
			return []string{}
		}
		return c.RunningModels
	case 11:
		return string(c.Status)
	case 12:
		if c.TotalEntities < 0 {
			return nil
		}
		return c.TotalEntities
	}
	panic("job: no common field " + strconv.Itoa(i))
}

// appendValue writes the block's field i as JSON, as value(i) would be
// written, without boxing it.
func (c *Common) appendValue(b []byte, i int) ([]byte, error) {
	if n, ok := c.number(i); ok {
		return strconv.AppendInt(b, int64(n), 10), nil
	}
	switch i {
	case 3:
		return appendNullable(b, c.CurrentModel)
	case 5:
		return strconv.AppendBool(b, c.Status == Paused), nil
	case 6:
		return appendString(b, c.JobType)
	case 7:
		return appendNullable(b, c.LastError)
	case 9:
		return appendStrings(b, c.RunningModels) // never null: [] when empty
	case 11:
		return appendString(b, string(c.Status))
	case 12:
		if c.TotalEntities < 0 {
			return append(b, "null"...), nil
		}
		return strconv.AppendInt(b, int64(c.TotalEntities), 10), nil
	}
	panic("job: no common field " + strconv.Itoa(i))
}

// appendNullable writes s, or null when it is empty.
func appendNullable(b []byte, s string) ([]byte, error) {
	if s == "" {
		return append(b, "null"...), nil
	}
	return appendString(b, s)
}

// merged returns data with the block under it: data itself without a
// block, else a new map.
func merged(data map[string]any, c *Common) map[string]any {
	if c == nil {
		return data
	}
	out := make(map[string]any, len(commonKeys)+len(data))
	for i, k := range commonKeys {
		out[k] = c.value(i)
	}
	for k, v := range data {
		out[k] = v
	}
	return out
}
