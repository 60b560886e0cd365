package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.JobStore = (*JobStore)(nil)
	_ ports.EventLog = (*EventLog)(nil)
)

type jobRow struct {
	bun.BaseModel `bun:"table:jobs"`

	ID          string          `bun:"id,pk"`
	OrgID       string          `bun:"org_id,notnull"`
	Type        string          `bun:"type,notnull"`
	State       string          `bun:"state,notnull"`
	ErrorCode   string          `bun:"error_code,notnull"`
	Error       string          `bun:"error,notnull"`
	Request     json.RawMessage `bun:"request"`
	Result      json.RawMessage `bun:"result"`
	CreatedAt   time.Time       `bun:"created_at,notnull"`
	UpdatedAt   time.Time       `bun:"updated_at,notnull"`
	HeartbeatAt time.Time       `bun:"heartbeat_at,notnull"`
}

func jobToRow(j *job.Job) *jobRow {
	return &jobRow{ID: j.ID, OrgID: j.OrgID, Type: string(j.Type), State: string(j.State), ErrorCode: string(j.ErrorCode),
		Error: j.Error, Request: jsonOrNil(j.Request), Result: jsonOrNil(j.Result), CreatedAt: utc(j.CreatedAt),
		UpdatedAt: utc(j.UpdatedAt), HeartbeatAt: utc(j.HeartbeatAt)}
}

func (r *jobRow) job() *job.Job {
	return &job.Job{ID: r.ID, OrgID: r.OrgID, Type: job.Type(r.Type), State: job.State(r.State),
		ErrorCode: job.ErrorCode(r.ErrorCode), Error: r.Error, Request: jsonOrNil(r.Request), Result: jsonOrNil(r.Result),
		CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt), HeartbeatAt: utc(r.HeartbeatAt)}
}

// live is the SQL list of the states a job can leave.
const live = "('pending', 'running', 'paused')"

// JobStore keeps jobs in the jobs table. Request and Result must be JSON
// (jsonb: whitespace and key order are not kept).
type JobStore struct{ db bun.IDB }

// NewJobStore returns a JobStore on db.
func NewJobStore(db bun.IDB) *JobStore { return &JobStore{db: db} }

// CreateJob inserts j; an existing id is ErrConflict.
func (s *JobStore) CreateJob(ctx context.Context, j *job.Job) error {
	if _, err := s.db.NewInsert().Model(jobToRow(j)).Exec(ctx); err != nil {
		return conflict(err, "create job "+j.ID)
	}
	return nil
}

// GetJob returns the job id of organization orgID.
func (s *JobStore) GetJob(ctx context.Context, orgID, id string) (*job.Job, error) {
	var r jobRow
	if err := s.db.NewSelect().Model(&r).Where("id = ? AND org_id = ?", id, orgID).Scan(ctx); err != nil {
		return nil, notFound(err, "get job "+id)
	}
	return r.job(), nil
}

// UpdateJob locks the job (SELECT … FOR UPDATE), calls fn and writes the
// result when fn returns nil; fn's error is returned as it is, so callers can
// test it for job.ErrTransition. The id and organization cannot change.
func (s *JobStore) UpdateJob(ctx context.Context, id string, fn func(*job.Job) error) (*job.Job, error) {
	var out *job.Job
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var r jobRow
		if err := tx.NewSelect().Model(&r).Where("id = ?", id).For("UPDATE").Scan(ctx); err != nil {
			return notFound(err, "update job "+id)
		}
		j := r.job()
		if err := fn(j); err != nil {
			return err
		}
		j.ID, j.OrgID = r.ID, r.OrgID
		nr := jobToRow(j)
		if _, err := tx.NewUpdate().Model(nr).WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("postgres: update job %s: %w", id, err)
		}
		out = nr.job()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Heartbeat sets heartbeat_at of the given jobs that are not terminal, in one
// statement.
func (s *JobStore) Heartbeat(ctx context.Context, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.db.NewUpdate().Model((*jobRow)(nil)).
		Set("heartbeat_at = ?", utc(at)).
		Where("id IN (?)", bun.List(ids)).
		Where("state IN " + live).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("postgres: heartbeat %d jobs: %w", len(ids), err)
	}
	return nil
}

// ListStale returns the pending, running or paused jobs whose heartbeat is
// older than before, oldest heartbeat first.
func (s *JobStore) ListStale(ctx context.Context, before time.Time) ([]*job.Job, error) {
	var rows []jobRow
	err := s.db.NewSelect().Model(&rows).
		Where("state IN "+live).
		Where("heartbeat_at < ?", utc(before)).
		Order("heartbeat_at ASC", "id ASC").
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: list stale jobs: %w", err)
	}
	out := make([]*job.Job, len(rows))
	for i := range rows {
		out[i] = rows[i].job()
	}
	return out, nil
}

type eventRow struct {
	bun.BaseModel `bun:"table:job_events"`

	JobID     string          `bun:"job_id,pk"`
	Seq       int64           `bun:"seq,pk"`
	Type      string          `bun:"type,notnull"`
	Data      json.RawMessage `bun:"data"`
	CreatedAt time.Time       `bun:"created_at,notnull"`
}

// EventLog keeps every job's events in the job_events table, keyed by
// (job_id, seq). Data comes back decoded from JSON (numbers as float64).
type EventLog struct{ db bun.IDB }

// NewEventLog returns an EventLog on db.
func NewEventLog(db bun.IDB) *EventLog { return &EventLog{db: db} }

// Append inserts the whole batch in one multi-row INSERT, so the batch is
// stored all or none and costs one round trip; a (JobID, Seq) that exists is
// ErrConflict.
func (l *EventLog) Append(ctx context.Context, events []job.Event) error {
	if len(events) == 0 {
		return nil
	}
	rows := make([]eventRow, len(events))
	for i, e := range events {
		r := eventRow{JobID: e.JobID, Seq: e.Seq, Type: string(e.Type), CreatedAt: utc(e.CreatedAt)}
		if e.Data != nil {
			b, err := json.Marshal(e.Data)
			if err != nil {
				return fmt.Errorf("postgres: append event %s/%d: %w", e.JobID, e.Seq, err)
			}
			r.Data = b
		}
		rows[i] = r
	}
	if _, err := l.db.NewInsert().Model(&rows).Exec(ctx); err != nil {
		return conflict(err, fmt.Sprintf("append %d events of job %s", len(events), events[0].JobID))
	}
	return nil
}

// List returns up to limit events of the job with Seq > after, in order. A
// limit of zero or less means no limit.
func (l *EventLog) List(ctx context.Context, jobID string, after int64, limit int) ([]job.Event, error) {
	var rows []eventRow
	q := l.db.NewSelect().Model(&rows).Where("job_id = ?", jobID).Where("seq > ?", after).Order("seq ASC")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("postgres: list events of job %s: %w", jobID, err)
	}
	out := make([]job.Event, len(rows))
	for i, r := range rows {
		e := job.Event{JobID: r.JobID, Seq: r.Seq, Type: job.EventType(r.Type), CreatedAt: utc(r.CreatedAt)}
		if len(r.Data) > 0 {
			if err := json.Unmarshal(r.Data, &e.Data); err != nil {
				return nil, fmt.Errorf("postgres: list events of job %s: seq %d: %w", jobID, r.Seq, err)
			}
		}
		out[i] = e
	}
	return out, nil
}
