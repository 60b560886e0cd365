package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.JobStore = (*JobStore)(nil)
	_ ports.EventLog = (*EventLog)(nil)
)

// JobStore keeps jobs in memory. UpdateJob holds the store's lock while fn
// runs, so fn must not call back into the store.
type JobStore struct {
	mu   sync.RWMutex
	jobs map[string]job.Job
}

// NewJobStore returns an empty JobStore.
func NewJobStore() *JobStore { return &JobStore{jobs: map[string]job.Job{}} }

func cloneJob(j job.Job) *job.Job {
	j.Request = cloneBytes(j.Request)
	j.Result = cloneBytes(j.Result)
	j.CreatedAt, j.UpdatedAt, j.HeartbeatAt, j.LeaseUntil = ts(j.CreatedAt), ts(j.UpdatedAt), ts(j.HeartbeatAt), ts(j.LeaseUntil)
	j.PauseUntil = ts(j.PauseUntil)
	return &j
}

// CreateJob stores j; an existing id is ErrConflict.
func (s *JobStore) CreateJob(_ context.Context, j *job.Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.jobs[j.ID]; ok {
		return fmt.Errorf("memory: create job %s: %w", j.ID, ports.ErrConflict)
	}
	s.jobs[j.ID] = *cloneJob(*j)
	return nil
}

// GetJob returns the job id of organization orgID.
func (s *JobStore) GetJob(_ context.Context, orgID, id string) (*job.Job, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	j, ok := s.jobs[id]
	if !ok || j.OrgID != orgID {
		return nil, fmt.Errorf("memory: get job %s: %w", id, ports.ErrNotFound)
	}
	return cloneJob(j), nil
}

// UpdateJob calls fn on a copy of the job and stores the copy when fn
// returns nil; fn's error is returned as it is. The id and organization
// cannot change.
func (s *JobStore) UpdateJob(_ context.Context, id string, fn func(*job.Job) error) (*job.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.jobs[id]
	if !ok {
		return nil, fmt.Errorf("memory: update job %s: %w", id, ports.ErrNotFound)
	}
	c := cloneJob(old)
	if err := fn(c); err != nil {
		return nil, err
	}
	c.ID, c.OrgID, c.Type, c.Request, c.CreatedAt = old.ID, old.OrgID, old.Type, cloneBytes(old.Request), old.CreatedAt
	stored := cloneJob(*c)
	s.jobs[id] = *stored
	return cloneJob(*stored), nil
}

// RenewLeases moves the leases owner still holds and reports the others.
func (s *JobStore) RenewLeases(_ context.Context, owner string, ids []string, until time.Time) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lost []string
	for _, id := range ids {
		j, ok := s.jobs[id]
		if !ok || j.State.Terminal() || j.Owner != owner {
			lost = append(lost, id)
			continue
		}
		j.LeaseUntil, j.HeartbeatAt = ts(until), ts(until)
		s.jobs[id] = j
	}
	return lost, nil
}

// oldest returns copies of the jobs keep selects, oldest by at first (then
// by id), at most limit of them (limit <= 0: all).
func (s *JobStore) oldest(keep func(job.Job) bool, at func(*job.Job) time.Time, limit int) []*job.Job {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*job.Job
	for _, j := range s.jobs {
		if keep(j) {
			out = append(out, cloneJob(j))
		}
	}
	sort.Slice(out, func(i, k int) bool {
		return oldestFirst(at(out[i]), out[i].ID, at(out[k]), out[k].ID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// ListLapsed returns live held jobs whose lease ended before now.
func (s *JobStore) ListLapsed(_ context.Context, now time.Time, limit int) ([]*job.Job, error) {
	return s.oldest(func(j job.Job) bool { return j.Lapsed(now) }, func(j *job.Job) time.Time { return j.LeaseUntil }, limit), nil
}

// ListPauseLapsed returns paused jobs whose pause timed out by now.
func (s *JobStore) ListPauseLapsed(_ context.Context, now time.Time, limit int) ([]*job.Job, error) {
	return s.oldest(func(j job.Job) bool { return j.PauseLapsed(now) }, func(j *job.Job) time.Time { return j.PauseUntil }, limit), nil
}

// ListUnclaimed returns running jobs nobody holds that last changed before
// cutoff.
func (s *JobStore) ListUnclaimed(_ context.Context, cutoff time.Time, limit int) ([]*job.Job, error) {
	return s.oldest(func(j job.Job) bool { return j.Unclaimed(cutoff) }, func(j *job.Job) time.Time { return j.UpdatedAt }, limit), nil
}

// CheckFences returns the jobs whose attempt moved on or that ended.
func (s *JobStore) CheckFences(_ context.Context, fences []ports.Fence) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var lost []string
	for _, f := range fences {
		if j, ok := s.jobs[f.JobID]; !ok || !j.Holds(f.Attempt) {
			lost = append(lost, f.JobID)
		}
	}
	return lost, nil
}

// EventLog keeps every job's events in memory, in their stored form (the
// codec's), so that they come back decoded the way the PostgreSQL adapter
// returns them and a caller never shares a map with the log.
type EventLog struct {
	codec ports.EventCodec
	mu    sync.RWMutex
	jobs  map[string][]storedEvent // by job id, ordered by seq
}

type storedEvent struct {
	seq       int64
	typ       job.EventType
	data      []byte // as codec.Encode wrote it
	createdAt time.Time
}

// NewEventLog returns an empty EventLog that keeps events in codec's stored
// form.
func NewEventLog(codec ports.EventCodec) *EventLog {
	return &EventLog{codec: codec, jobs: map[string][]storedEvent{}}
}

// Append stores the events, all or none: a (JobID, Seq) that exists, or that
// appears twice in the batch, is ErrConflict.
func (l *EventLog) Append(_ context.Context, events []job.Event) error {
	if len(events) == 0 {
		return nil
	}
	type key struct {
		job string
		seq int64
	}
	enc := make([]storedEvent, len(events))
	var seen map[key]bool // a batch of a few events is checked pairwise, without a map
	if len(events) > 16 {
		seen = make(map[key]bool, len(events))
	}
	for i, e := range events {
		k := key{e.JobID, e.Seq}
		dup := seen[k]
		if seen == nil {
			dup = slices.ContainsFunc(events[:i], func(o job.Event) bool { return o.JobID == e.JobID && o.Seq == e.Seq })
		}
		if dup {
			return fmt.Errorf("memory: append event %s/%d: duplicate in batch: %w", e.JobID, e.Seq, ports.ErrConflict)
		}
		if seen != nil {
			seen[k] = true
		}
		se := storedEvent{seq: e.Seq, typ: e.Type, createdAt: ts(e.CreatedAt)}
		b, err := l.codec.Encode(e) // nil without data
		if err != nil {
			return fmt.Errorf("memory: append event %s/%d: %w", e.JobID, e.Seq, err)
		}
		se.data = b
		enc[i] = se
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range events {
		if _, ok := l.find(e.JobID, e.Seq); ok {
			return fmt.Errorf("memory: append event %s/%d: %w", e.JobID, e.Seq, ports.ErrConflict)
		}
	}
	if l.appendTail(events, enc) {
		return nil
	}
	for i, e := range events {
		evs := l.jobs[e.JobID]
		at, _ := l.find(e.JobID, e.Seq)
		evs = append(evs, storedEvent{})
		copy(evs[at+1:], evs[at:])
		evs[at] = enc[i]
		l.jobs[e.JobID] = evs
	}
	return nil
}

// appendTail stores a batch of one job's events, in order and all after
// the job's last, in one append (a job's whole log, for a job that ends
// at once: enc itself); false, storing nothing, for any other batch.
func (l *EventLog) appendTail(events []job.Event, enc []storedEvent) bool {
	id := events[0].JobID
	for i, e := range events {
		if e.JobID != id || (i > 0 && e.Seq <= events[i-1].Seq) {
			return false
		}
	}
	evs := l.jobs[id]
	if len(evs) > 0 && evs[len(evs)-1].seq >= events[0].Seq {
		return false
	}
	if evs == nil {
		l.jobs[id] = enc
	} else {
		l.jobs[id] = append(evs, enc...)
	}
	return true
}

// find returns where seq is, or would be inserted, in a job's events.
func (l *EventLog) find(jobID string, seq int64) (int, bool) {
	evs := l.jobs[jobID]
	i := sort.Search(len(evs), func(i int) bool { return evs[i].seq >= seq })
	return i, i < len(evs) && evs[i].seq == seq
}

// Last returns the highest Seq of the job's events.
func (l *EventLog) Last(_ context.Context, jobID string) (int64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	evs := l.jobs[jobID]
	if len(evs) == 0 {
		return 0, nil
	}
	return evs[len(evs)-1].seq, nil
}

// List returns up to limit events of the job with Seq > after, in order.
// A limit of zero or less means no limit.
func (l *EventLog) List(_ context.Context, jobID string, after int64, limit int) ([]job.Event, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	evs := l.jobs[jobID]
	i := sort.Search(len(evs), func(i int) bool { return evs[i].seq > after })
	var out []job.Event
	for ; i < len(evs) && (limit <= 0 || len(out) < limit); i++ {
		se := evs[i]
		p, c, err := l.codec.Decode(se.typ, se.data)
		if err != nil {
			return nil, fmt.Errorf("memory: list events of job %s: %w", jobID, err)
		}
		e := job.Event{JobID: jobID, Seq: se.seq, Type: se.typ, Payload: p, Common: c, CreatedAt: se.createdAt}
		out = append(out, e)
	}
	return out, nil
}

// The methods below undo the writes of a unit of work (see uow.go and
// undo.go).

func (s *JobStore) deleteJob(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.jobs, id)
}

func (s *JobStore) restoreJob(prev job.Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs[prev.ID] = *cloneJob(prev)
}

// snapshot copies the jobs with these ids (those that exist).
func (s *JobStore) snapshot(ids []string) []job.Job {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []job.Job
	for _, id := range ids {
		if j, ok := s.jobs[id]; ok {
			out = append(out, *cloneJob(j))
		}
	}
	return out
}

// removeEvents deletes exactly these (JobID, Seq) pairs.
func (l *EventLog) removeEvents(events []eventKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range events {
		if i, ok := l.find(e.jobID, e.seq); ok {
			evs := l.jobs[e.jobID]
			l.jobs[e.jobID] = append(evs[:i], evs[i+1:]...)
		}
	}
}

// eventKey names one event of the log.
type eventKey struct {
	jobID string
	seq   int64
}
