package jobcodec

import (
	"strconv"

	"github.com/entityenrich/enrich/domain/job"
)

// commonBlock is job.Common as this package writes it: under the payload's
// fields, which win.
type commonBlock job.Common

// commonKeys are the block's fields, in the order sorted objects write
// keys.
var commonKeys = [...]string{"completed_entities", "completed_models", "current_attempt", "current_model",
	"failed_entities", "is_paused", "job_type", "last_error_summary", "max_attempts", "running_models",
	"skipped_entities", "status", "total_entities", "total_models"}

// number is the block's field i when it is a plain count.
func (c *commonBlock) number(i int) (int, bool) {
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

// appendValue writes the block's field i (commonKeys' order).
func (c *commonBlock) appendValue(b []byte, i int) ([]byte, error) {
	if n, ok := c.number(i); ok {
		return strconv.AppendInt(b, int64(n), 10), nil
	}
	switch i {
	case 3:
		return appendNullable(b, c.CurrentModel)
	case 5:
		return strconv.AppendBool(b, c.Status == job.Paused), nil
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
	panic("jobcodec: no common field " + strconv.Itoa(i))
}

// appendNullable writes s, or null when it is empty.
func appendNullable(b []byte, s string) ([]byte, error) {
	if s == "" {
		return append(b, "null"...), nil
	}
	return appendString(b, s)
}

// readCommon reads the block from an event's stored fields f; nil when f
// has none of its keys but those the payload writes itself (own).
func readCommon(f fields, own func(k string) bool) *job.Common {
	present := false
	for _, k := range commonKeys {
		if _, ok := f[k]; ok && !own(k) {
			present = true
			break
		}
	}
	if !present {
		return nil
	}
	c := &job.Common{JobType: f.str("job_type"), Status: job.State(f.str("status")), TotalModels: f.int("total_models"),
		CompletedModels: f.int("completed_models"), RunningModels: f.strs("running_models"),
		CurrentModel: f.str("current_model"), CurrentAttempt: f.int("current_attempt"), MaxAttempts: f.int("max_attempts"),
		LastError: f.str("last_error_summary"), TotalEntities: -1, CompletedEntities: f.int("completed_entities"),
		FailedEntities: f.int("failed_entities"), SkippedEntities: f.int("skipped_entities")}
	if f["total_entities"] != nil {
		c.TotalEntities = f.int("total_entities")
	}
	return c
}
