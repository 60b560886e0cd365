package contract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// UnitOfWorkFixture is a unit of work under test and a way to look at what
// it committed.
type UnitOfWorkFixture struct {
	UoW ports.UnitOfWork
	// Repos are the same stores outside any unit of work. The suite reads
	// back through them only after a unit ended (on PGlite a read while a
	// transaction is open would wait for it). Repos.Queue is not used.
	Repos ports.Repos
	// Delivered returns every job that the units' Repos.Queue delivered for
	// good (the enqueues of committed units), in order. The suite looks only
	// at the jobs it enqueued. Inside a unit, Repos.Queue must not be nil.
	Delivered func(t *testing.T) []ports.QueuedJob
}

// RecordingQueue is a JobEnqueuer that records every job it is given. Give
// it to a unit of work that buffers enqueues until commit (memory), and use
// Jobs as UnitOfWorkFixture.Delivered.
type RecordingQueue struct {
	mu   sync.Mutex
	jobs []ports.QueuedJob
}

// Enqueue records j.
func (q *RecordingQueue) Enqueue(_ context.Context, j ports.QueuedJob) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = append(q.jobs, j)
	return nil
}

// Jobs returns what Enqueue recorded, in order.
func (q *RecordingQueue) Jobs(*testing.T) []ports.QueuedJob {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]ports.QueuedJob(nil), q.jobs...)
}

// uowWorld is what a case stores before its unit of work runs (committed)
// and what the unit then writes.
type uowWorld struct {
	// before the unit
	org      *access.Organization
	user     *access.User // an editor, changed to an owner with a new email
	key      *access.APIKey
	job      *job.Job       // pending, started by the unit
	schema   *schema.Schema // renamed by the unit
	token    *access.RefreshToken
	oldEmail string
	// written by the unit
	newEmail string
	newOrg   *access.Organization
	newUser  *access.User
	newKey   *access.APIKey
	newJob   *job.Job
	newToken *access.RefreshToken
	schemaID string
	recordID string
}

func newWorld(t *testing.T, ctx context.Context, r ports.Repos) *uowWorld {
	t.Helper()
	is := is.New(t)
	w := &uowWorld{org: &access.Organization{ID: newID("org"), Name: "before", CreatedAt: at(0)}}
	w.user = newUser(w.org.ID, 1)
	w.oldEmail = w.user.Email
	w.key = newKey(w.org.ID, newID("ent")[:12], 2)
	w.job = newJob(w.org.ID, job.Pending, 3)
	w.token = newRefreshToken(newID("fam"), w.user.ID, w.org.ID, 4)
	is.NoErr(r.Orgs.CreateOrg(ctx, w.org))
	is.NoErr(r.Users.CreateUser(ctx, w.user))
	is.NoErr(r.Keys.CreateKey(ctx, w.key))
	is.NoErr(r.Jobs.CreateJob(ctx, w.job))
	w.schema = newSchema(w.org.ID, 5)
	is.NoErr(r.Schemas.CreateSchema(ctx, w.schema))
	is.NoErr(r.Events.Append(ctx, events(w.job.ID, 1, 2)))
	is.NoErr(r.RefreshTokens.CreateRefreshToken(ctx, w.token))

	w.newOrg = &access.Organization{ID: newID("org"), Name: "in the unit", CreatedAt: at(10)}
	w.newUser = newUser(w.newOrg.ID, 11)
	w.newEmail = "Moved." + w.user.ID + "@Example.COM"
	w.newKey = newKey(w.newOrg.ID, newID("ent")[:12], 12)
	w.newJob = newJob(w.newOrg.ID, job.Pending, 13)
	w.newToken = newRefreshToken(newID("fam"), w.newUser.ID, w.newOrg.ID, 14)
	return w
}

// write makes one write of every kind through r: creations in every store,
// updates of what existed, event appends to a new and an existing job, a
// used and revoked refresh token, and an enqueue.
func (w *uowWorld) write(ctx context.Context, r ports.Repos) error {
	steps := []func() error{
		func() error { return r.Orgs.CreateOrg(ctx, w.newOrg) },
		func() error { return r.Users.CreateUser(ctx, w.newUser) },
		func() error { return r.Keys.CreateKey(ctx, w.newKey) },
		func() error {
			sc := newSchema(w.newOrg.ID, 15)
			w.schemaID = sc.ID
			return r.Schemas.CreateSchema(ctx, sc)
		},
		func() error {
			rec := newRecord(w.newOrg.ID, 16)
			rec.JobID = w.newJob.ID
			w.recordID = rec.ID
			return r.Records.CreateRecord(ctx, rec)
		},
		func() error { return r.Jobs.CreateJob(ctx, w.newJob) },
		func() error { return r.Events.Append(ctx, events(w.newJob.ID, 1, 3)) },
		func() error { return r.Events.Append(ctx, events(w.job.ID, 3, 3)) },
		func() error { return r.RefreshTokens.CreateRefreshToken(ctx, w.newToken) },
		func() error {
			_, err := r.Users.UpdateUser(ctx, w.org.ID, w.user.ID, func(u *access.User) error {
				u.Role, u.Email = access.Owner, w.newEmail
				return nil
			})
			return err
		},
		func() error {
			_, err := r.Schemas.UpdateSchema(ctx, w.org.ID, w.schema.ID, func(sc *schema.Schema) error {
				sc.Name = "renamed in the unit"
				return nil
			})
			return err
		},
		func() error {
			_, err := r.Keys.UpdateKey(ctx, w.org.ID, w.key.ID, func(k *access.APIKey) error {
				k.Name, k.RevokedAt = "renamed", atPtr(20)
				return nil
			})
			return err
		},
		func() error {
			_, err := r.Jobs.UpdateJob(ctx, w.job.ID, func(j *job.Job) error { return j.Start(at(21)) })
			return err
		},
		func() error {
			prev, err := r.RefreshTokens.UseRefreshToken(ctx, w.token.Hash, at(22))
			if err == nil && prev.UsedAt != nil {
				err = errors.New("contract: the refresh token was used before the unit")
			}
			return err
		},
		func() error { return r.RefreshTokens.RevokeFamily(ctx, w.token.FamilyID, at(23)) },
		func() error {
			// The unit reads its own writes.
			if _, err := r.Orgs.GetOrg(ctx, w.newOrg.ID); err != nil {
				return fmt.Errorf("contract: the unit does not see its own organization: %w", err)
			}
			u, err := r.Users.GetUserByEmail(ctx, w.newEmail)
			if err != nil || u.ID != w.user.ID {
				return fmt.Errorf("contract: the unit does not see its own user change: %v", err)
			}
			return nil
		},
		func() error {
			if r.Queue == nil {
				return errors.New("contract: Repos.Queue is nil inside the unit")
			}
			return r.Queue.Enqueue(ctx, ports.QueuedJob{JobID: w.newJob.ID, OrgID: w.newOrg.ID})
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// delivered returns the jobs of ids among what the queue delivered.
func delivered(t *testing.T, f UnitOfWorkFixture, ids ...string) []string {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []string
	for _, j := range f.Delivered(t) {
		if want[j.JobID] {
			out = append(out, j.JobID)
		}
	}
	return out
}

// checkCommitted asserts that every write of w.write is visible.
func (w *uowWorld) checkCommitted(t *testing.T, ctx context.Context, f UnitOfWorkFixture) {
	t.Helper()
	is := is.NewRelaxed(t)
	r := f.Repos
	_, err := r.Orgs.GetOrg(ctx, w.newOrg.ID)
	is.NoErr(err) // the new organization
	u, err := r.Users.GetUserByEmail(ctx, w.newUser.Email)
	is.NoErr(err) // the new user
	if err == nil {
		is.Equal(u.ID, w.newUser.ID)
	}
	_, err = r.Keys.GetKey(ctx, w.newOrg.ID, w.newKey.ID)
	is.NoErr(err) // the new key
	_, err = r.Schemas.GetSchema(ctx, w.newOrg.ID, w.schemaID)
	is.NoErr(err) // the new schema
	_, err = r.Records.GetRecord(ctx, w.newOrg.ID, w.recordID)
	is.NoErr(err) // the new record
	_, err = r.Jobs.GetJob(ctx, w.newOrg.ID, w.newJob.ID)
	is.NoErr(err) // the new job
	evs, err := r.Events.List(ctx, w.newJob.ID, 0, 0)
	is.NoErr(err)
	is.Equal(seqs(evs), span(1, 3)) // the new job's events
	evs, err = r.Events.List(ctx, w.job.ID, 0, 0)
	is.NoErr(err)
	is.Equal(seqs(evs), span(1, 3)) // the existing job's appended event

	u, err = r.Users.GetUser(ctx, w.user.ID)
	is.NoErr(err)
	if err == nil {
		is.Equal(u.Role, access.Owner) // the user update
		is.Equal(u.Email, w.newEmail)
	}
	_, err = r.Users.GetUserByEmail(ctx, w.oldEmail)
	is.True(errors.Is(err, ports.ErrNotFound)) // the old email is free
	k, err := r.Keys.GetKey(ctx, w.org.ID, w.key.ID)
	is.NoErr(err)
	if err == nil {
		is.Equal(k.Name, "renamed") // the key update
		is.True(k.RevokedAt != nil)
	}
	j, err := r.Jobs.GetJob(ctx, w.org.ID, w.job.ID)
	is.NoErr(err)
	if err == nil {
		is.Equal(j.State, job.Running) // the job update
	}
	sc, err := r.Schemas.GetSchema(ctx, w.org.ID, w.schema.ID)
	is.NoErr(err)
	if err == nil {
		is.Equal(sc.Name, "renamed in the unit") // the schema update
	}
	prev, err := r.RefreshTokens.UseRefreshToken(ctx, w.token.Hash, at(30))
	is.NoErr(err)
	if err == nil {
		is.True(prev.UsedAt != nil)    // used in the unit
		is.True(prev.RevokedAt != nil) // and revoked
	}
	prev, err = r.RefreshTokens.UseRefreshToken(ctx, w.newToken.Hash, at(30))
	is.NoErr(err) // the new refresh token
	if err == nil {
		is.Equal(prev.ID, w.newToken.ID)
	}
	is.Equal(delivered(t, f, w.newJob.ID), []string{w.newJob.ID}) // the enqueue
}

// checkRolledBack asserts that nothing of w.write is visible and that what
// existed before is as it was.
func (w *uowWorld) checkRolledBack(t *testing.T, ctx context.Context, f UnitOfWorkFixture) {
	t.Helper()
	is := is.NewRelaxed(t)
	r := f.Repos
	notFound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("%s: got %v, want not found (rolled back)", what, err)
		}
	}
	_, err := r.Orgs.GetOrg(ctx, w.newOrg.ID)
	notFound("new organization", err)
	_, err = r.Users.GetUser(ctx, w.newUser.ID)
	notFound("new user", err)
	_, err = r.Users.GetUserByEmail(ctx, w.newUser.Email)
	notFound("new user's email", err)
	_, err = r.Keys.GetKey(ctx, w.newOrg.ID, w.newKey.ID)
	notFound("new key", err)
	_, err = r.Schemas.GetSchema(ctx, w.newOrg.ID, w.schemaID)
	notFound("new schema", err)
	_, err = r.Records.GetRecord(ctx, w.newOrg.ID, w.recordID)
	notFound("new record", err)
	_, err = r.Jobs.GetJob(ctx, w.newOrg.ID, w.newJob.ID)
	notFound("new job", err)
	_, err = r.RefreshTokens.UseRefreshToken(ctx, w.newToken.Hash, at(30))
	notFound("new refresh token", err)
	evs, err := r.Events.List(ctx, w.newJob.ID, 0, 0)
	is.NoErr(err)
	is.Equal(len(evs), 0) // no event of the new job
	evs, err = r.Events.List(ctx, w.job.ID, 0, 0)
	is.NoErr(err)
	is.Equal(seqs(evs), span(1, 2)) // the existing job's events as they were

	u, err := r.Users.GetUser(ctx, w.user.ID)
	is.NoErr(err)
	if err == nil {
		checkUser(t, u, w.user) // the user as it was
	}
	u, err = r.Users.GetUserByEmail(ctx, w.oldEmail)
	is.NoErr(err) // the old email still finds the user
	if err == nil {
		is.Equal(u.ID, w.user.ID)
	}
	_, err = r.Users.GetUserByEmail(ctx, w.newEmail)
	notFound("changed email", err)
	k, err := r.Keys.GetKey(ctx, w.org.ID, w.key.ID)
	is.NoErr(err)
	if err == nil {
		checkKey(t, k, w.key) // the key as it was
	}
	j, err := r.Jobs.GetJob(ctx, w.org.ID, w.job.ID)
	is.NoErr(err)
	if err == nil {
		checkJob(t, j, w.job) // the job as it was
	}
	sc, err := r.Schemas.GetSchema(ctx, w.org.ID, w.schema.ID)
	is.NoErr(err)
	if err == nil {
		checkSchema(t, sc, w.schema) // the schema as it was
	}
	prev, err := r.RefreshTokens.UseRefreshToken(ctx, w.token.Hash, at(30))
	is.NoErr(err)
	if err == nil {
		is.Equal(prev.UsedAt, nil)    // not used
		is.Equal(prev.RevokedAt, nil) // nor revoked
	}
	is.Equal(len(delivered(t, f, w.newJob.ID)), 0) // the enqueue was not delivered

	// The rolled-back creations left nothing behind: the same ids and email
	// can be created again.
	is.NoErr(r.Orgs.CreateOrg(ctx, w.newOrg))
	is.NoErr(r.Users.CreateUser(ctx, w.newUser))
	is.NoErr(r.Jobs.CreateJob(ctx, w.newJob))
	is.NoErr(r.Events.Append(ctx, events(w.newJob.ID, 1, 3)))
}

// errTyped is an error type that must come back from InTx as it is.
type errTyped struct{ n int }

func (e *errTyped) Error() string { return fmt.Sprintf("contract: typed error %d", e.n) }

// RunUnitOfWork runs the UnitOfWork contract on the fixtures newUoW returns:
// a committed unit's writes are all visible; an error or a panic rolls every
// write back (creations, updates, event appends, refresh token use and
// revocation) and is passed on as it is; enqueues reach the queue only when
// the unit commits. The race of concurrent units is RunUnitOfWorkConcurrency.
func RunUnitOfWork(t *testing.T, newUoW func(t *testing.T) UnitOfWorkFixture) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, f UnitOfWorkFixture)
	}{
		{"commit makes every write visible", func(t *testing.T, f UnitOfWorkFixture) {
			w := newWorld(t, ctx, f.Repos)
			if err := f.UoW.InTx(ctx, w.write); err != nil {
				t.Fatalf("InTx: %v", err)
			}
			w.checkCommitted(t, ctx, f)
		}},
		{"an error rolls back every write and comes back as it is", func(t *testing.T, f UnitOfWorkFixture) {
			is := is.New(t)
			w := newWorld(t, ctx, f.Repos)
			err := f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				if err := w.write(ctx, r); err != nil {
					return err
				}
				return errBoom
			})
			is.True(err == errBoom) // fn's own error, not wrapped
			w.checkRolledBack(t, ctx, f)
		}},
		{"a typed error comes back as it is", func(t *testing.T, f UnitOfWorkFixture) {
			is := is.New(t)
			want := &errTyped{n: 7}
			err := f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				return fmt.Errorf("wrapped by fn: %w", want)
			})
			var got *errTyped
			is.True(errors.As(err, &got))
			is.True(got == want)
			is.Equal(err.Error(), "wrapped by fn: contract: typed error 7")
		}},
		{"a store error returned by fn rolls back the unit", func(t *testing.T, f UnitOfWorkFixture) {
			is := is.New(t)
			w := newWorld(t, ctx, f.Repos)
			err := f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				if err := r.Orgs.CreateOrg(ctx, w.newOrg); err != nil {
					return err
				}
				if err := r.Jobs.CreateJob(ctx, w.newJob); err != nil {
					return err
				}
				return r.Orgs.CreateOrg(ctx, w.org) // exists: a conflict
			})
			is.True(errors.Is(err, ports.ErrConflict))
			_, err = f.Repos.Orgs.GetOrg(ctx, w.newOrg.ID)
			is.True(errors.Is(err, ports.ErrNotFound))
			_, err = f.Repos.Jobs.GetJob(ctx, w.newOrg.ID, w.newJob.ID)
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
		{"a panic rolls back every write and panics on", func(t *testing.T, f UnitOfWorkFixture) {
			is := is.New(t)
			w := newWorld(t, ctx, f.Repos)
			var got any
			func() {
				defer func() { got = recover() }()
				_ = f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
					if err := w.write(ctx, r); err != nil {
						t.Errorf("write: %v", err)
					}
					panic("contract: panic in a unit of work")
				})
			}()
			is.Equal(got, "contract: panic in a unit of work")
			w.checkRolledBack(t, ctx, f)
		}},
		{"enqueues are delivered when the unit commits, in order", func(t *testing.T, f UnitOfWorkFixture) {
			is := is.New(t)
			a, b, c := newID("job"), newID("job"), newID("job")
			is.NoErr(f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				for _, id := range []string{a, b} {
					if err := r.Queue.Enqueue(ctx, ports.QueuedJob{JobID: id, OrgID: "org"}); err != nil {
						return err
					}
				}
				return nil
			}))
			err := f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				if err := r.Queue.Enqueue(ctx, ports.QueuedJob{JobID: c, OrgID: "org"}); err != nil {
					return err
				}
				return errBoom
			})
			is.True(err == errBoom)
			is.Equal(delivered(t, f, a, b, c), []string{a, b})
		}},
		{"EndJob stores the job's end, its records and its events together", func(t *testing.T, f UnitOfWorkFixture) {
			is := is.New(t)
			e := newEnding(t, ctx, f.Repos)
			is.NoErr(f.UoW.EndJob(ctx, e.end(job.Running, 2, 4)))
			got, err := f.Repos.Jobs.GetJob(ctx, e.job.OrgID, e.job.ID)
			is.NoErr(err)
			is.Equal(got.State, job.Completed)
			is.Equal(string(got.Result), `{"n": 7}`)
			is.True(got.UpdatedAt.Equal(at(30)))
			is.Equal(got.Attempt, 2)         // the fence stays
			is.Equal(got.Owner, e.job.Owner) // only the end is written
			is.Equal(string(got.Request), `{"ask": "it"}`)
			rec, err := f.Repos.Records.GetRecord(ctx, e.rec.OrgID, e.rec.ID)
			is.NoErr(err)
			checkRecord(t, rec, e.rec) // the batch insert maps every column, web searches included
			is.Equal(storedSeqs(t, ctx, f.Repos, e.job.ID), []int64{1, 2, 3, 4})
		}},
		{"EndJob of a pause releases the lease and sets the deadline, fenced like any end", func(t *testing.T, f UnitOfWorkFixture) {
			is := is.New(t)
			e := newEnding(t, ctx, f.Repos)
			end := e.end(job.Running, 2, 3)
			end.Records = nil
			end.Job.State, end.Job.Result = job.Running, nil
			is.NoErr(end.Job.Pause(at(90), at(30)))
			is.NoErr(f.UoW.EndJob(ctx, end))
			got, err := f.Repos.Jobs.GetJob(ctx, e.job.OrgID, e.job.ID)
			is.NoErr(err)
			is.Equal(got.State, job.Paused)
			is.Equal(got.Owner, "")
			is.True(got.LeaseUntil.IsZero())
			sameTime(t, "PauseUntil", got.PauseUntil, at(90))
			is.Equal(got.Attempt, 2)
			is.Equal(storedSeqs(t, ctx, f.Repos, e.job.ID), []int64{1, 2, 3})
			// The same end again: the job is no longer running under attempt 2.
			again := e.end(job.Running, 4, 4)
			is.True(errors.Is(f.UoW.EndJob(ctx, again), ports.ErrFenced))
		}},
		{"EndJob appends the run's usage with the end, and not without it", func(t *testing.T, f UnitOfWorkFixture) {
			if f.Repos.Usage == nil {
				t.Skip("the fixture keeps no usage ledger")
			}
			is := is.New(t)
			e := newEnding(t, ctx, f.Repos)
			end := e.end(job.Running, 2, 4)
			end.Usage = []usage.Entry{newUsage(e.job.OrgID, 1), newUsage(e.job.OrgID, 2)}
			stale := end
			stale.Job = new(*end.Job)
			stale.Job.Attempt = 1 // another holder's end: refused, and nothing written
			is.True(errors.Is(f.UoW.EndJob(ctx, stale), ports.ErrFenced))
			got, err := f.Repos.Usage.ListUsage(ctx, e.job.OrgID, at(0), at(100))
			is.NoErr(err)
			is.Equal(len(got), 0)
			is.NoErr(f.UoW.EndJob(ctx, end))
			got, err = f.Repos.Usage.ListUsage(ctx, e.job.OrgID, at(0), at(100))
			is.NoErr(err)
			is.Equal(len(got), 2)
			is.Equal(got[0].ID, end.Usage[0].ID)
			is.Equal(got[1].WebSearchCalls, end.Usage[1].WebSearchCalls) // 2: every column written
		}},
		{"EndJob writes nothing unless the job is still held in the same state", func(t *testing.T, f UnitOfWorkFixture) {
			for _, tt := range []struct {
				name    string
				from    job.State
				attempt int
				id      string
			}{
				{"another attempt holds it", job.Running, 1, ""},
				{"a later attempt holds it", job.Running, 3, ""},
				{"it is in another state", job.Paused, 2, ""},
				{"it does not exist", job.Running, 2, newID("job")},
			} {
				t.Run(tt.name, func(t *testing.T) {
					is := is.New(t)
					e := newEnding(t, ctx, f.Repos)
					end := e.end(tt.from, 2, 3)
					end.Job.Attempt = tt.attempt
					if tt.id != "" {
						end.Job.ID = tt.id
					}
					err := f.UoW.EndJob(ctx, end)
					is.True(errors.Is(err, ports.ErrFenced))
					e.checkUnended(t, ctx, f.Repos)
				})
			}
		}},
		{"EndJob of many jobs at once: each end is written or refused on its own", func(t *testing.T, f UnitOfWorkFixture) {
			is := is.New(t)
			const n = 12
			ends := make([]*ending, n)
			for i := range ends {
				ends[i] = newEnding(t, ctx, f.Repos)
			}
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i, e := range ends {
				wg.Add(1)
				go func() {
					defer wg.Done()
					end := e.end(job.Running, 2, 3)
					if i%4 == 0 {
						end.Job.Attempt = 1 // fenced: another attempt holds it
					}
					errs[i] = f.UoW.EndJob(ctx, end)
				}()
			}
			wg.Wait()
			for i, e := range ends {
				if i%4 == 0 {
					is.True(errors.Is(errs[i], ports.ErrFenced))
					e.checkUnended(t, ctx, f.Repos)
					continue
				}
				is.NoErr(errs[i])
				got, err := f.Repos.Jobs.GetJob(ctx, e.job.OrgID, e.job.ID)
				is.NoErr(err)
				is.Equal(got.State, job.Completed)
				is.Equal(storedSeqs(t, ctx, f.Repos, e.job.ID), []int64{1, 2, 3})
			}
		}},
		{"EndJob with Create stores a job never stored, as it ended, with its records and events", func(t *testing.T, f UnitOfWorkFixture) {
			is := is.New(t)
			e := newEnding(t, ctx, f.Repos)
			j := *e.job
			j.ID = newID("job")
			j.Attempt = 1
			e.rec.JobID = j.ID
			end := ports.JobEnd{Job: &j, From: job.Running, Create: true, Records: []*enrichment.Record{e.rec},
				Events: events(j.ID, 1, 3)}
			end.Job.State, end.Job.Result, end.Job.UpdatedAt = job.Completed, json.RawMessage(`{"n": 8}`), at(31)
			is.NoErr(f.UoW.EndJob(ctx, end))
			got, err := f.Repos.Jobs.GetJob(ctx, j.OrgID, j.ID)
			is.NoErr(err)
			is.Equal(got.State, job.Completed)
			is.Equal(string(got.Result), `{"n": 8}`)
			is.Equal(string(got.Request), `{"ask": "it"}`) // the whole job is written
			is.Equal(got.Attempt, 1)
			is.True(got.CreatedAt.Equal(e.job.CreatedAt))
			_, err = f.Repos.Records.GetRecord(ctx, e.rec.OrgID, e.rec.ID)
			is.NoErr(err)
			is.Equal(storedSeqs(t, ctx, f.Repos, j.ID), []int64{1, 2, 3})

			// A job that is stored already is a conflict, and nothing of
			// that end is written.
			again := e.end(job.Running, 2, 3)
			again.Create = true
			again.Records[0] = newRecord(j.OrgID, 22)
			is.True(errors.Is(f.UoW.EndJob(ctx, again), ports.ErrConflict))
			_, err = f.Repos.Records.GetRecord(ctx, again.Records[0].OrgID, again.Records[0].ID)
			is.True(errors.Is(err, ports.ErrNotFound))
			is.Equal(storedSeqs(t, ctx, f.Repos, e.job.ID), []int64{1})
		}},
		{"EndJob with an event that exists is ErrConflict and writes nothing", func(t *testing.T, f UnitOfWorkFixture) {
			is := is.New(t)
			e := newEnding(t, ctx, f.Repos)
			err := f.UoW.EndJob(ctx, e.end(job.Running, 1, 2))
			is.True(errors.Is(err, ports.ErrConflict))
			e.checkUnended(t, ctx, f.Repos)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newUoW(t)) })
	}
}

// ending is a running job (attempt 2, event 1 stored) whose holder is about
// to end it with a record.
type ending struct {
	job *job.Job
	rec *enrichment.Record
}

func newEnding(t *testing.T, ctx context.Context, r ports.Repos) *ending {
	t.Helper()
	is := is.New(t)
	org := &access.Organization{ID: newID("org"), Name: "ending", CreatedAt: at(0)}
	is.NoErr(r.Orgs.CreateOrg(ctx, org))
	j := newJob(org.ID, job.Running, 20)
	j.Request, j.Attempt, j.Owner, j.LeaseUntil = json.RawMessage(`{"ask": "it"}`), 2, "replica-a", at(25)
	is.NoErr(r.Jobs.CreateJob(ctx, j))
	is.NoErr(r.Events.Append(ctx, events(j.ID, 1, 1)))
	rec := newRecord(org.ID, 21)
	rec.JobID = j.ID
	return &ending{job: j, rec: rec}
}

// end is the holder's end: completed, with the record and events lo to hi.
func (e *ending) end(from job.State, lo, hi int64) ports.JobEnd {
	j := *e.job
	j.State, j.Result, j.UpdatedAt = job.Completed, json.RawMessage(`{"n": 7}`), at(30)
	return ports.JobEnd{Job: &j, From: from, Records: []*enrichment.Record{e.rec}, Events: events(e.job.ID, lo, hi)}
}

// checkUnended checks that the job is as newEnding stored it.
func (e *ending) checkUnended(t *testing.T, ctx context.Context, r ports.Repos) {
	t.Helper()
	is := is.New(t)
	got, err := r.Jobs.GetJob(ctx, e.job.OrgID, e.job.ID)
	is.NoErr(err)
	is.Equal(got.State, job.Running)
	is.Equal(got.Attempt, 2)
	is.Equal(len(got.Result), 0)
	_, err = r.Records.GetRecord(ctx, e.rec.OrgID, e.rec.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
	is.Equal(storedSeqs(t, ctx, r, e.job.ID), []int64{1})
}

func storedSeqs(t *testing.T, ctx context.Context, r ports.Repos, jobID string) []int64 {
	t.Helper()
	evs, err := r.Events.List(ctx, jobID, 0, 0)
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Seq
	}
	return out
}

// counter is the Result document of the job that RunUnitOfWorkConcurrency
// increments.
type counter struct {
	N int `json:"n"`
}

// RunUnitOfWorkConcurrency races 20 goroutines, each running one unit of
// work that locks an organization (OrgStore.LockOrg), reads a counter and
// the organization's members, then writes the counter plus one and a member
// numbered after the count it read. Every unit must succeed, and the end
// count must be exact: no read-modify-write is lost and no number is taken
// twice. The adapter must run the units as truly concurrent transactions
// (PGlite, which runs one query at a time, cannot).
func RunUnitOfWorkConcurrency(t *testing.T, newUoW func(t *testing.T) UnitOfWorkFixture) {
	ctx := context.Background()
	is := is.New(t)
	f := newUoW(t)
	org := &access.Organization{ID: newID("org"), Name: "raced", CreatedAt: at(0)}
	is.NoErr(f.Repos.Orgs.CreateOrg(ctx, org))
	j := newJob(org.ID, job.Running, 0)
	j.Result = []byte(`{"n": 0}`)
	is.NoErr(f.Repos.Jobs.CreateJob(ctx, j))

	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				if err := r.Orgs.LockOrg(ctx, org.ID); err != nil {
					return err
				}
				cur, err := r.Jobs.GetJob(ctx, org.ID, j.ID)
				if err != nil {
					return err
				}
				var c counter
				if err := json.Unmarshal(cur.Result, &c); err != nil {
					return err
				}
				members, err := r.Users.ListUsers(ctx, org.ID)
				if err != nil {
					return err
				}
				u := newUser(org.ID, i)
				u.Email = fmt.Sprintf("member%d.%s@example.com", len(members), org.ID)
				if err := r.Users.CreateUser(ctx, u); err != nil {
					return err
				}
				next, _ := json.Marshal(counter{N: c.N + 1})
				_, err = r.Jobs.UpdateJob(ctx, j.ID, func(j *job.Job) error {
					j.Result = next
					return nil
				})
				return err
			})
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("unit %d: %v", i, err)
		}
	}
	got, err := f.Repos.Jobs.GetJob(ctx, org.ID, j.ID)
	is.NoErr(err)
	var c counter
	is.NoErr(json.Unmarshal(got.Result, &c))
	is.Equal(c.N, n) // no increment lost
	members, err := f.Repos.Users.ListUsers(ctx, org.ID)
	is.NoErr(err)
	var emails []string
	for _, m := range members {
		emails = append(emails, m.Email)
	}
	sort.Strings(emails)
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("member%d.%s@example.com", i, org.ID))
	}
	sort.Strings(want)
	is.Equal(emails, want) // every count read once
}
