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
	Attempt     int             `bun:"attempt,notnull"`
	Owner       string          `bun:"owner,notnull"`
	LeaseUntil  bun.NullTime    `bun:"lease_until"`
	PauseUntil  bun.NullTime    `bun:"pause_until"`
	Continues   int             `bun:"continues,notnull"`
}

func jobToRow(j *job.Job) *jobRow {
	return &jobRow{ID: j.ID, OrgID: j.OrgID, Type: string(j.Type), State: string(j.State), ErrorCode: string(j.ErrorCode),
		Error: j.Error, Request: jsonOrNil(j.Request), Result: jsonOrNil(j.Result), CreatedAt: utc(j.CreatedAt),
		UpdatedAt: utc(j.UpdatedAt), HeartbeatAt: utc(j.HeartbeatAt), Attempt: j.Attempt, Owner: j.Owner,
		LeaseUntil: nullTime(j.LeaseUntil), PauseUntil: nullTime(j.PauseUntil), Continues: j.Continues}
}

func zeroOrUTC(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return utc(t)
}

func nullTime(t time.Time) bun.NullTime {
	if t.IsZero() {
		return bun.NullTime{}
	}
	return bun.NullTime{Time: utc(t)}
}

func (r *jobRow) job() *job.Job {
	return &job.Job{ID: r.ID, OrgID: r.OrgID, Type: job.Type(r.Type), State: job.State(r.State),
		ErrorCode: job.ErrorCode(r.ErrorCode), Error: r.Error, Request: jsonOrNil(r.Request), Result: jsonOrNil(r.Result),
		CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt), HeartbeatAt: utc(r.HeartbeatAt), Attempt: r.Attempt,
		Owner: r.Owner, LeaseUntil: zeroOrUTC(r.LeaseUntil.Time), PauseUntil: zeroOrUTC(r.PauseUntil.Time), Continues: r.Continues}
}

// JobStore keeps jobs in the jobs table. Request and Result must be JSON
// (jsonb: whitespace and key order are not kept).
type JobStore struct {
	db      bun.IDB
	creates *group[*jobRow] // the group commit of creates; nil inside a transaction
}

// NewJobStore returns a JobStore on db.
func NewJobStore(db bun.IDB) *JobStore {
	s := &JobStore{db: db}
	if _, inTx := db.(bun.Tx); !inTx {
		s.creates = &group[*jobRow]{
			all: func(rows []*jobRow) error {
				_, err := db.NewInsert().Model(&rows).Exec(context.Background())
				return err
			},
			one: func(r *jobRow) error { return s.insert(context.Background(), r) },
		}
	}
	return s
}

// CreateJob inserts j; an existing id is ErrConflict. Outside a transaction,
// jobs created at once are inserted together; a refused row makes its group
// go row by row, each with its own answer.
func (s *JobStore) CreateJob(ctx context.Context, j *job.Job) error {
	if s.creates == nil {
		return s.insert(ctx, jobToRow(j))
	}
	return s.creates.submit(jobToRow(j))
}

func (s *JobStore) insert(ctx context.Context, r *jobRow) error {
	if _, err := s.db.NewInsert().Model(r).Exec(ctx); err != nil {
		return conflict(err, "create job "+r.ID)
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
// test it for job.ErrTransition. The id, organization, type, request and
// creation time cannot change.
func (s *JobStore) UpdateJob(ctx context.Context, id string, fn func(*job.Job) error) (*job.Job, error) {
	var out *job.Job
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		var r jobRow
		if err := tx.NewSelect().Model(&r).Where("id = ?", id).For("UPDATE").Scan(ctx); err != nil {
			return notFound(err, "update job "+id)
		}
		j := r.job()
		if err := fn(j); err != nil {
			return err
		}
		j.ID, j.OrgID, j.Type, j.Request, j.CreatedAt = r.ID, r.OrgID, job.Type(r.Type), jsonOrNil(r.Request), utc(r.CreatedAt)
		nr := jobToRow(j)
		// Only what can change is written: the request (jsonb) is not sent
		// and parsed again on every transition.
		if _, err := tx.NewUpdate().Model(nr).
			Column("state", "error_code", "error", "result", "updated_at", "heartbeat_at", "attempt", "owner", "lease_until",
				"pause_until", "continues").
			WherePK().Exec(ctx); err != nil {
			return fail(err, "update job "+id)
		}
		out = nr.job()
		return nil
	})
	if err != nil {
		return nil, txErr(err, "update job "+id)
	}
	return out, nil
}

// RenewLeases moves the leases owner still holds to until in one UPDATE and
// returns the ids it did not move.
func (s *JobStore) RenewLeases(ctx context.Context, owner string, ids []string, until time.Time) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var kept []string
	err := s.db.NewRaw(`UPDATE jobs SET lease_until = ?, heartbeat_at = ?
		WHERE id IN (?) AND owner = ? AND state IN (?) RETURNING id`,
		utc(until), utc(until), bun.List(ids), owner, bun.List(liveStates())).Scan(ctx, &kept)
	if err != nil {
		return nil, fail(err, fmt.Sprintf("renew %d leases", len(ids)))
	}
	return missing(ids, kept), nil
}

// ListLapsed returns live held jobs whose lease ended before now (the SQL
// form of job.Job.Lapsed), oldest lease first (jobs_lapsed_idx).
func (s *JobStore) ListLapsed(ctx context.Context, now time.Time, limit int) ([]*job.Job, error) {
	var rows []jobRow
	q := s.db.NewSelect().Model(&rows).
		Where("state IN (?)", bun.List(liveStates())).
		Where("owner <> ''").
		Where("lease_until < ?", utc(now)).
		Order("lease_until ASC", "id ASC")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fail(err, "list lapsed jobs")
	}
	out := make([]*job.Job, len(rows))
	for i := range rows {
		out[i] = rows[i].job()
	}
	return out, nil
}

// ListPauseLapsed returns paused jobs whose pause timed out by now, oldest
// deadline first (jobs_pause_idx).
func (s *JobStore) ListPauseLapsed(ctx context.Context, now time.Time, limit int) ([]*job.Job, error) {
	var rows []jobRow
	q := s.db.NewSelect().Model(&rows).
		Where("state = ?", string(job.Paused)).
		Where("pause_until <= ?", utc(now)).
		Order("pause_until ASC", "id ASC")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fail(err, "list timed-out pauses")
	}
	out := make([]*job.Job, len(rows))
	for i := range rows {
		out[i] = rows[i].job()
	}
	return out, nil
}

// ListUnclaimed returns running jobs nobody holds that last changed before
// cutoff (the SQL form of job.Job.Unclaimed), oldest change first
// (jobs_unclaimed_idx, a partial index of the few running jobs without an
// owner).
func (s *JobStore) ListUnclaimed(ctx context.Context, cutoff time.Time, limit int) ([]*job.Job, error) {
	var rows []jobRow
	q := s.db.NewSelect().Model(&rows).
		Where("state = ?", string(job.Running)).
		Where("owner = ''").
		Where("updated_at < ?", utc(cutoff)).
		Order("updated_at ASC", "id ASC")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fail(err, "list unclaimed jobs")
	}
	out := make([]*job.Job, len(rows))
	for i := range rows {
		out[i] = rows[i].job()
	}
	return out, nil
}

// CheckFences returns the jobs whose attempt moved on or that ended. It takes
// FOR SHARE locks, so inside a transaction a takeover (which updates the
// row) waits for the caller's commit.
func (s *JobStore) CheckFences(ctx context.Context, fences []ports.Fence) ([]string, error) {
	if len(fences) == 0 {
		return nil, nil
	}
	ids := make([]string, len(fences))
	for i, f := range fences {
		ids[i] = f.JobID
	}
	var rows []struct {
		ID      string `bun:"id"`
		Attempt int    `bun:"attempt"`
		State   string `bun:"state"`
	}
	err := s.db.NewRaw(`SELECT id, attempt, state FROM jobs WHERE id IN (?) ORDER BY id FOR SHARE`, bun.List(ids)).Scan(ctx, &rows)
	if err != nil {
		return nil, fail(err, fmt.Sprintf("check %d fences", len(fences)))
	}
	var held []string
	for _, f := range fences {
		for _, r := range rows {
			if j := (job.Job{Attempt: r.Attempt, State: job.State(r.State)}); r.ID == f.JobID && j.Holds(f.Attempt) {
				held = append(held, f.JobID)
			}
		}
	}
	return missing(ids, held), nil
}

// liveStates are the states a job can leave, as stored.
func liveStates() []string {
	var out []string
	for _, st := range job.States() {
		if !st.Terminal() {
			out = append(out, string(st))
		}
	}
	return out
}

// missing returns the elements of all that are not in some.
func missing(all, some []string) []string {
	in := make(map[string]bool, len(some))
	for _, s := range some {
		in[s] = true
	}
	var out []string
	for _, s := range all {
		if !in[s] {
			out = append(out, s)
		}
	}
	return out
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
// (job_id, seq), their data in the codec's stored form.
type EventLog struct {
	db    bun.IDB
	codec ports.EventCodec
}

// NewEventLog returns an EventLog on db that stores events in codec's form.
func NewEventLog(db bun.IDB, codec ports.EventCodec) *EventLog {
	return &EventLog{db: db, codec: codec}
}

// Append inserts the whole batch in one multi-row INSERT, so the batch is
// stored all or none and costs one round trip; a (JobID, Seq) that exists is
// ErrConflict.
func (l *EventLog) Append(ctx context.Context, events []job.Event) error {
	if len(events) == 0 {
		return nil
	}
	q, err := appendEvents(l.db, l.codec, events)
	if err != nil {
		return err
	}
	if _, err := q.Exec(ctx); err != nil {
		return conflict(err, fmt.Sprintf("append %d events of job %s", len(events), events[0].JobID))
	}
	return nil
}

// appendEvents is the statement that inserts events. It sends no NOTIFY:
// PostgreSQL serialises the commits of transactions that notify, fsync
// included, so followers on other replicas are told after the commit by the
// event stream (Invalidations.PublishAll, a transaction without WAL).
func appendEvents(db bun.IDB, codec ports.EventCodec, events []job.Event) (*bun.InsertQuery, error) {
	rows := make([]eventRow, len(events))
	for i, e := range events {
		r := eventRow{JobID: e.JobID, Seq: e.Seq, Type: string(e.Type), CreatedAt: utc(e.CreatedAt)}
		b, err := codec.Encode(e)
		if err != nil {
			return nil, fmt.Errorf("postgres: append event %s/%d: %w", e.JobID, e.Seq, err)
		}
		r.Data = b
		rows[i] = r
	}
	return db.NewInsert().Model(&rows), nil
}

// Last returns the highest Seq of the job's events.
func (l *EventLog) Last(ctx context.Context, jobID string) (int64, error) {
	var last int64
	if err := l.db.NewRaw("SELECT coalesce(max(seq), 0) FROM job_events WHERE job_id = ?", jobID).Scan(ctx, &last); err != nil {
		return 0, fail(err, "last event of job "+jobID)
	}
	return last, nil
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
		return nil, fail(err, "list events of job "+jobID)
	}
	out := make([]job.Event, len(rows))
	for i, r := range rows {
		typ := job.EventType(r.Type)
		p, c, err := l.codec.Decode(typ, r.Data)
		if err != nil {
			return nil, fmt.Errorf("postgres: list events of job %s: seq %d: %w", jobID, r.Seq, err)
		}
		out[i] = job.Event{JobID: r.JobID, Seq: r.Seq, Type: typ, Payload: p, Common: c, CreatedAt: utc(r.CreatedAt)}
	}
	return out, nil
}
