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

// value is the block's field i (commonKeys' order) as a map holds it.
func (c *Common) value(i int) any {
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	switch i {
	case 0:
		return c.CompletedEntities
	case 1:
		return c.CompletedModels
	case 2:
		return c.CurrentAttempt
	case 3:
		return nullable(c.CurrentModel)
	case 4:
		return c.FailedEntities
	case 5:
		return c.Status == Paused
	case 6:
		return c.JobType
	case 7:
		return nullable(c.LastError)
	case 8:
		return c.MaxAttempts
	case 9:
		if c.RunningModels == nil {
			return []string{}
		}
		return c.RunningModels
	case 10:
		return c.SkippedEntities
	case 11:
		return string(c.Status)
	case 12:
		if c.TotalEntities < 0 {
			return nil
		}
		return c.TotalEntities
	case 13:
		return c.TotalModels
	}
	panic("job: no common field " + strconv.Itoa(i))
}

// appendValue writes the block's field i as JSON, as value(i) would be
// written, without boxing it.
func (c *Common) appendValue(b []byte, i int) ([]byte, error) {
	switch i {
	case 0:
		return strconv.AppendInt(b, int64(c.CompletedEntities), 10), nil
	case 1:
		return strconv.AppendInt(b, int64(c.CompletedModels), 10), nil
	case 2:
		return strconv.AppendInt(b, int64(c.CurrentAttempt), 10), nil
	case 4:
		return strconv.AppendInt(b, int64(c.FailedEntities), 10), nil
	case 8:
		return strconv.AppendInt(b, int64(c.MaxAttempts), 10), nil
	case 10:
		return strconv.AppendInt(b, int64(c.SkippedEntities), 10), nil
	case 13:
		return strconv.AppendInt(b, int64(c.TotalModels), 10), nil
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
