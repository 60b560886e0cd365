package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.UnitOfWork = (*UnitOfWork)(nil)

// UnitOfWork runs units of work over the memory stores, with an undo log in
// place of a transaction.
//
// Isolation, honestly: units of work run one at a time (one mutex), so a
// unit's reads and checks hold until it ends, which is what a locking
// transaction gives. But a unit's writes go to the stores at once: readers
// and writers that do not go through the UnitOfWork see them before the unit
// ends, and a rollback puts back the values the unit overwrote, over any
// change a non-transactional writer made to the same object meanwhile.
// Within a unit, reads see the unit's own writes.
type UnitOfWork struct {
	mu      sync.Mutex
	orgs    *OrgStore
	users   *UserStore
	keys    *APIKeyStore
	schemas *SchemaStore
	records *RecordStore
	jobs    *JobStore
	events  *EventLog
	refresh *RefreshTokenStore
	queue   ports.JobEnqueuer
	usage   *UsageLedger
	// invitations, when set, are Repos.Invitations.
	invitations *InvitationStore
	// sync, when set, is the database-sync state behind Repos.Feed.
	sync *SyncStore
	// outbox, when set, is Repos.Outbox.
	outbox *Notifications
	// concepts and links, when set, take a job's end's concept writes.
	concepts *ConceptStore
	links    *ConceptLinks
	// reviews, when set, is the review list a merge's unit drops pairs
	// from (Repos.Vocabulary).
	reviews *ConceptReviews
}

// NewUnitOfWork returns a UnitOfWork over these stores. queue receives the
// enqueues of committed units (nil: Repos.Queue is nil, as on PostgreSQL
// without a queue).
func NewUnitOfWork(orgs *OrgStore, users *UserStore, keys *APIKeyStore, schemas *SchemaStore, records *RecordStore,
	jobs *JobStore, events *EventLog, refresh *RefreshTokenStore, queue ports.JobEnqueuer) *UnitOfWork {
	return &UnitOfWork{orgs: orgs, users: users, keys: keys, schemas: schemas, records: records, jobs: jobs,
		events: events, refresh: refresh, queue: queue}
}

// InTx runs fn with stores that record an undo action for every write. When
// fn returns nil, the jobs it enqueued are handed to the queue, in order,
// while the unit still holds the lock; if the queue refuses one, the unit is
// rolled back and the queue's error returned (runs already handed over stay:
// a worker must drop a run whose job it cannot find). So Enqueue must not
// wait for another unit of work. When fn returns an error or panics, the
// writes are undone in reverse order and the error is returned as it is (or
// the panic goes on). fn must not call InTx again: units do not nest.
func (w *UnitOfWork) InTx(ctx context.Context, fn func(ctx context.Context, r ports.Repos) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: unit of work: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	u := &undoLog{}
	committed := false
	defer func() {
		if !committed {
			u.rollback()
		}
	}()
	r := ports.Repos{
		Orgs:          txOrgs{w.orgs, u},
		Users:         txUsers{w.users, u},
		Keys:          txKeys{w.keys, u},
		Schemas:       txSchemas{w.schemas, u},
		Records:       txRecords{w.records, u},
		Jobs:          txJobs{w.jobs, u},
		Events:        txEvents{w.events, u},
		RefreshTokens: txRefresh{w.refresh, u},
	}
	if w.usage != nil {
		r.Usage = txUsage{w.usage, u}
	}
	if w.invitations != nil {
		r.Invitations = txInvitations{w.invitations, u}
	}
	if w.sync != nil {
		r.Feed = txFeed{w.sync, u}
		r.Databases = txDatabases{w.sync, u}
		r.Entities = txEntities{w.sync, u}
	}
	if w.outbox != nil {
		r.Outbox = txOutbox{w.outbox, u}
	}
	if w.concepts != nil {
		r.Vocabulary = txVocabulary{concepts: w.concepts, links: w.links, reviews: w.reviews, u: u}
	}
	var q *heldQueue
	if w.queue != nil {
		q = &heldQueue{}
		r.Queue = q
	}
	if err := fn(ctx, r); err != nil {
		return err
	}
	for _, j := range q.take() {
		if err := w.queue.Enqueue(ctx, j); err != nil {
			return fmt.Errorf("memory: unit of work: enqueue job %s: %w", j.JobID, err)
		}
	}
	committed = true
	return nil
}

// undoLog is the inverse of every write a unit made, in order.
type undoLog struct{ undo []func() }

func (l *undoLog) add(f func()) { l.undo = append(l.undo, f) }

func (l *undoLog) rollback() {
	for i := len(l.undo) - 1; i >= 0; i-- {
		l.undo[i]()
	}
	l.undo = nil
}

// heldQueue keeps a unit's enqueues until the unit commits.
type heldQueue struct {
	mu   sync.Mutex
	jobs []ports.QueuedJob
}

func (q *heldQueue) Enqueue(_ context.Context, j ports.QueuedJob) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = append(q.jobs, j)
	return nil
}

func (q *heldQueue) take() []ports.QueuedJob {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.jobs
	q.jobs = nil
	return out
}

// The tx* types are the stores as a unit of work sees them: reads pass
// through, and every write records its inverse in the unit's undo log.

type txOrgs struct {
	*OrgStore
	u *undoLog
}

func (t txOrgs) CreateOrg(ctx context.Context, o *access.Organization) error {
	if err := t.OrgStore.CreateOrg(ctx, o); err != nil {
		return err
	}
	id := o.ID
	t.u.add(func() { t.deleteOrg(id) })
	return nil
}

func (t txOrgs) UpdateOrg(ctx context.Context, id string, fn func(*access.Organization) error) (*access.Organization, error) {
	var prev access.Organization
	out, err := t.OrgStore.UpdateOrg(ctx, id, func(o *access.Organization) error {
		prev = cloneOrg(*o)
		return fn(o)
	})
	if err != nil {
		return nil, err
	}
	t.u.add(func() { t.restoreOrg(prev) })
	return out, nil
}

type txUsers struct {
	*UserStore
	u *undoLog
}

func (t txUsers) CreateUser(ctx context.Context, u *access.User) error {
	if err := t.UserStore.CreateUser(ctx, u); err != nil {
		return err
	}
	id := u.ID
	t.u.add(func() { t.deleteUser(id) })
	return nil
}

func (t txUsers) UpdateUser(ctx context.Context, orgID, id string, fn func(*access.User) error) (*access.User, error) {
	var prev access.User
	out, err := t.UserStore.UpdateUser(ctx, orgID, id, func(u *access.User) error {
		prev = *u // the stored value: the store hands fn a copy of it
		return fn(u)
	})
	if err != nil {
		return nil, err
	}
	t.u.add(func() { t.restoreUser(prev) })
	return out, nil
}

type txKeys struct {
	*APIKeyStore
	u *undoLog
}

func (t txKeys) CreateKey(ctx context.Context, k *access.APIKey) error {
	if err := t.APIKeyStore.CreateKey(ctx, k); err != nil {
		return err
	}
	id := k.ID
	t.u.add(func() { t.deleteKey(id) })
	return nil
}

func (t txKeys) UpdateKey(ctx context.Context, orgID, id string, fn func(*access.APIKey) error) (*access.APIKey, error) {
	var prev access.APIKey
	out, err := t.APIKeyStore.UpdateKey(ctx, orgID, id, func(k *access.APIKey) error {
		prev = cloneKey(*k)
		return fn(k)
	})
	if err != nil {
		return nil, err
	}
	t.u.add(func() { t.restoreKey(prev) })
	return out, nil
}

func (t txKeys) RecordUsage(_ context.Context, usage []ports.KeyUsage) error {
	t.u.add(t.recordUsageUndoable(usage))
	return nil
}

type txSchemas struct {
	*SchemaStore
	u *undoLog
}

func (t txSchemas) CreateSchema(ctx context.Context, sc *schema.Schema) error {
	if err := t.SchemaStore.CreateSchema(ctx, sc); err != nil {
		return err
	}
	id := sc.ID
	t.u.add(func() { t.deleteSchema(id) })
	return nil
}

func (t txSchemas) UpdateSchema(ctx context.Context, orgID, id string, fn func(*schema.Schema) error) (*schema.Schema, error) {
	var prev schema.Schema
	out, err := t.SchemaStore.UpdateSchema(ctx, orgID, id, func(sc *schema.Schema) error {
		prev = *cloneSchema(*sc)
		return fn(sc)
	})
	if err != nil {
		return nil, err
	}
	t.u.add(func() { t.restoreSchema(prev) })
	return out, nil
}

type txRecords struct {
	*RecordStore
	u *undoLog
}

func (t txRecords) CreateRecord(ctx context.Context, r *enrichment.Record) error {
	if err := t.RecordStore.CreateRecord(ctx, r); err != nil {
		return err
	}
	id := r.ID
	t.u.add(func() { t.deleteRecord(id) })
	return nil
}

type txJobs struct {
	*JobStore
	u *undoLog
}

func (t txJobs) CreateJob(ctx context.Context, j *job.Job) error {
	if err := t.JobStore.CreateJob(ctx, j); err != nil {
		return err
	}
	id := j.ID
	t.u.add(func() { t.deleteJob(id) })
	return nil
}

func (t txJobs) UpdateJob(ctx context.Context, id string, fn func(*job.Job) error) (*job.Job, error) {
	var prev *job.Job
	out, err := t.JobStore.UpdateJob(ctx, id, func(j *job.Job) error {
		prev = cloneJob(*j)
		return fn(j)
	})
	if err != nil {
		return nil, err
	}
	t.u.add(func() { t.restoreJob(*prev) })
	return out, nil
}

func (t txJobs) RenewLeases(ctx context.Context, owner string, ids []string, until time.Time) ([]string, error) {
	prev := t.snapshot(ids)
	lost, err := t.JobStore.RenewLeases(ctx, owner, ids, until)
	if err != nil {
		return nil, err
	}
	t.u.add(func() {
		for _, j := range prev {
			t.restoreJob(j)
		}
	})
	return lost, nil
}

type txEvents struct {
	*EventLog
	u *undoLog
}

func (t txEvents) Append(ctx context.Context, events []job.Event) error {
	if err := t.EventLog.Append(ctx, events); err != nil {
		return err
	}
	// Append stores all or none and refuses pairs that exist, so on success
	// every (JobID, Seq) of the batch is this unit's to remove.
	added := make([]eventKey, len(events))
	for i, e := range events {
		added[i] = eventKey{e.JobID, e.Seq}
	}
	t.u.add(func() { t.removeEvents(added) })
	return nil
}

type txRefresh struct {
	*RefreshTokenStore
	u *undoLog
}

func (t txRefresh) CreateRefreshToken(ctx context.Context, rt *access.RefreshToken) error {
	if err := t.RefreshTokenStore.CreateRefreshToken(ctx, rt); err != nil {
		return err
	}
	id := rt.ID
	t.u.add(func() { t.deleteRefreshToken(id) })
	return nil
}

func (t txRefresh) UseRefreshToken(ctx context.Context, hash string, at time.Time) (*access.RefreshToken, error) {
	prev, err := t.RefreshTokenStore.UseRefreshToken(ctx, hash, at)
	if err != nil {
		return nil, err
	}
	if prev.UsedAt == nil { // this call marked it
		id := prev.ID
		t.u.add(func() { t.unuseRefreshToken(id) })
	}
	return prev, nil
}

func (t txRefresh) RevokeFamily(_ context.Context, familyID string, at time.Time) error {
	ids := t.revoke(func(rt *access.RefreshToken) bool { return rt.FamilyID == familyID }, at)
	t.u.add(func() { t.unrevoke(ids) })
	return nil
}

func (t txRefresh) RevokeUserTokens(_ context.Context, userID string, at time.Time) error {
	ids := t.revoke(func(rt *access.RefreshToken) bool { return rt.UserID == userID }, at)
	t.u.add(func() { t.unrevoke(ids) })
	return nil
}

// EndJob stores a job's end as one unit of work: the job, fenced by
// end.Job.Attempt and end.From (created, with end.Create), then its records
// and events.
func (w *UnitOfWork) EndJob(ctx context.Context, end ports.JobEnd) error {
	return w.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		if end.Create {
			if err := r.Jobs.CreateJob(ctx, end.Job); err != nil {
				return err
			}
		} else if _, err := r.Jobs.UpdateJob(ctx, end.Job.ID, func(j *job.Job) error {
			if j.Attempt != end.Job.Attempt || j.State != end.From {
				return fmt.Errorf("memory: end job %s attempt %d from %s: %w", j.ID, end.Job.Attempt, end.From, ports.ErrFenced)
			}
			j.State, j.ErrorCode, j.Error, j.UpdatedAt = end.Job.State, end.Job.ErrorCode, end.Job.Error, end.Job.UpdatedAt
			j.Result = bytes.Clone(end.Job.Result)
			if end.Job.State == job.Paused {
				// A pause releases the lease and sets the pause's deadline.
				j.Owner, j.LeaseUntil, j.PauseUntil = end.Job.Owner, end.Job.LeaseUntil, end.Job.PauseUntil
			}
			return nil
		}); errors.Is(err, ports.ErrNotFound) {
			return fmt.Errorf("memory: end job %s: %w", end.Job.ID, ports.ErrFenced)
		} else if err != nil {
			return err
		}
		for _, rec := range end.Records {
			if err := r.Records.CreateRecord(ctx, rec); err != nil {
				return err
			}
		}
		if len(end.Sync) > 0 && len(end.Records) > 0 && r.Entities != nil {
			if _, err := r.Entities.WriteEntities(ctx, end.Sync); err != nil {
				return err
			}
		}
		if len(end.Usage) > 0 && r.Usage != nil {
			if err := r.Usage.AppendUsage(ctx, end.Usage); err != nil {
				return err
			}
		}
		if len(end.SchemaEvents) > 0 && r.Outbox != nil {
			if err := r.Outbox.QueueEvents(ctx, end.SchemaEvents); err != nil {
				return err
			}
		}
		if err := r.Events.Append(ctx, end.Events); err != nil {
			return err
		}
		// Last, as nothing after them can fail: the vocabulary has no
		// undo log.
		if len(end.Records) > 0 && w.links != nil && !end.Concepts.Empty() {
			if err := w.links.AddLinks(ctx, end.Concepts.Links); err != nil {
				return err
			}
			return w.concepts.BumpRefCounts(ctx, end.Job.OrgID, end.Concepts.Bumps)
		}
		return nil
	})
}

// WithConcepts makes a job's end store its records' concept links in
// links and bump their reference counts in concepts, and gives units the
// vocabulary (Repos.Vocabulary: concepts, links and reviews, which may be
// nil).
func (w *UnitOfWork) WithConcepts(concepts *ConceptStore, links *ConceptLinks, reviews *ConceptReviews) *UnitOfWork {
	w.concepts, w.links, w.reviews = concepts, links, reviews
	return w
}
