package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

func TestOrgStore(t *testing.T) {
	contract.RunOrgStore(t, func(*testing.T) ports.OrgStore { return memory.NewOrgStore() })
}

func TestUserStore(t *testing.T) {
	contract.RunUserStore(t, func(*testing.T) ports.UserStore { return memory.NewUserStore() })
}

func TestAPIKeyStore(t *testing.T) {
	contract.RunAPIKeyStore(t, func(*testing.T) ports.APIKeyStore { return memory.NewAPIKeyStore() })
}

func TestRefreshTokenStore(t *testing.T) {
	contract.RunRefreshTokenStore(t, func(*testing.T) ports.RefreshTokenStore { return memory.NewRefreshTokenStore() })
	contract.RunRefreshTokenStoreConcurrency(t, func(*testing.T) ports.RefreshTokenStore { return memory.NewRefreshTokenStore() })
}

func TestAbuseStores(t *testing.T) {
	contract.RunLoginThrottleStore(t, func(*testing.T) ports.LoginThrottleStore { return memory.NewLoginThrottleStore() })
	contract.RunDeniedTokenStore(t, func(*testing.T) ports.DeniedTokenStore { return memory.NewDeniedTokenStore() })
	contract.RunInvitationStore(t, func(*testing.T) ports.InvitationStore { return memory.NewInvitationStore() },
		func(*testing.T) string { return "org_" + time.Now().Format("150405.000000000") })
	contract.RunRefreshAccessTokens(t, func(*testing.T) ports.RefreshTokenStore { return memory.NewRefreshTokenStore() })
}

func TestSchemaStore(t *testing.T) {
	contract.RunSchemaStore(t, func(*testing.T) ports.SchemaStore { return memory.NewSchemaStore() })
	contract.RunSchemaLifecycle(t, func(*testing.T) ports.SchemaStore { return memory.NewSchemaStore() })
}

func TestRecordStore(t *testing.T) {
	contract.RunRecordStore(t, func(*testing.T) ports.RecordStore { return memory.NewRecordStore() })
	contract.RunRecordPurge(t, func(*testing.T) ports.RecordStore { return memory.NewRecordStore() })
	contract.RunRecordDeletion(t, func(*testing.T) ports.RecordStore { return memory.NewRecordStore() })
	contract.RunRecordConceptRepoint(t, func(*testing.T) ports.RecordStore { return memory.NewRecordStore() })
}

func TestJobStore(t *testing.T) {
	contract.RunJobStore(t, func(*testing.T) ports.JobStore { return memory.NewJobStore() })
	contract.RunJobStoreConcurrency(t, func(*testing.T) ports.JobStore { return memory.NewJobStore() })
}

func TestEventLog(t *testing.T) {
	contract.RunEventLog(t, func(*testing.T) ports.EventLog { return memory.NewEventLog(jobcodec.Events{}) })
}

// newUoW builds a unit of work over fresh stores, with queue (nil: a
// recording queue that the fixture reads).
func newUoW(queue ports.JobEnqueuer) contract.UnitOfWorkFixture {
	orgs, users, keys := memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore()
	schemas, records, jobs := memory.NewSchemaStore(), memory.NewRecordStore(), memory.NewJobStore()
	events, refresh := memory.NewEventLog(jobcodec.Events{}), memory.NewRefreshTokenStore()
	rec := &contract.RecordingQueue{}
	if queue == nil {
		queue = rec
	}
	ledger := memory.NewUsageLedger()
	return contract.UnitOfWorkFixture{
		UoW: memory.NewUnitOfWork(orgs, users, keys, schemas, records, jobs, events, refresh, queue).WithUsage(ledger),
		Repos: ports.Repos{Orgs: orgs, Users: users, Keys: keys, Schemas: schemas, Records: records, Jobs: jobs,
			Events: events, RefreshTokens: refresh, Usage: ledger},
		Delivered: rec.Jobs,
	}
}

func TestUnitOfWork(t *testing.T) {
	contract.RunUnitOfWork(t, func(*testing.T) contract.UnitOfWorkFixture { return newUoW(nil) })
	contract.RunPurgeInUnitOfWork(t, func(*testing.T) contract.UnitOfWorkFixture { return newUoW(nil) })
	contract.RunRecordDeletionInUnitOfWork(t, func(*testing.T) contract.UnitOfWorkFixture { return newUoW(nil) })
	contract.RunUnitOfWorkConcurrency(t, func(*testing.T) contract.UnitOfWorkFixture { return newUoW(nil) })
}

// refusingQueue refuses every job, like a queue that is full or stopping.
type refusingQueue struct{}

var errRefused = errors.New("queue refuses")

func (refusingQueue) Enqueue(context.Context, ports.QueuedJob) error { return errRefused }

// TestUnitOfWorkEnqueueRefused: the memory queue is handed the enqueues
// after fn returned, so its refusal rolls the unit back there.
func TestUnitOfWorkEnqueueRefused(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	f := newUoW(refusingQueue{})
	org := &access.Organization{ID: "org-refused", Name: "x"}
	err := f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		if err := r.Orgs.CreateOrg(ctx, org); err != nil {
			return err
		}
		return r.Queue.Enqueue(ctx, ports.QueuedJob{JobID: "j", OrgID: org.ID}) // held until commit: nil
	})
	is.True(errors.Is(err, errRefused))
	_, err = f.Repos.Orgs.GetOrg(ctx, org.ID)
	is.True(errors.Is(err, ports.ErrNotFound)) // rolled back
}

// TestUnitOfWorkWithoutQueue: no queue, no Repos.Queue (as on PostgreSQL).
func TestUnitOfWorkWithoutQueue(t *testing.T) {
	is := is.New(t)
	u := memory.NewUnitOfWork(memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore(), memory.NewSchemaStore(),
		memory.NewRecordStore(), memory.NewJobStore(), memory.NewEventLog(jobcodec.Events{}), memory.NewRefreshTokenStore(), nil)
	is.NoErr(u.InTx(context.Background(), func(_ context.Context, r ports.Repos) error {
		is.Equal(r.Queue, nil)
		is.True(r.Orgs != nil && r.Users != nil && r.Keys != nil && r.Schemas != nil && r.Records != nil &&
			r.Jobs != nil && r.Events != nil && r.RefreshTokens != nil)
		return nil
	}))
}

func TestProviderKeyStore(t *testing.T) {
	contract.RunProviderKeyStore(t, func(*testing.T) ports.ProviderKeyStore { return memory.NewProviderKeyStore() })
	contract.RunProviderKeyStoreConcurrency(t, func(*testing.T) []ports.ProviderKeyStore {
		s := memory.NewProviderKeyStore()
		return []ports.ProviderKeyStore{s, s}
	})
}

func TestProviderKeyRotation(t *testing.T) {
	contract.RunProviderKeyRotation(t, func(*testing.T) ports.ProviderKeyStore { return memory.NewProviderKeyStore() })
}

func TestUsageLedger(t *testing.T) {
	contract.RunUsageLedger(t, func(*testing.T) ports.UsageLedger { return memory.NewUsageLedger() })
}

// TestUnitOfWorkUsage: ledger entries written in a unit of work leave with
// its rollback.
func TestUnitOfWorkUsage(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	l := memory.NewUsageLedger()
	u := memory.NewUnitOfWork(memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore(), memory.NewSchemaStore(),
		memory.NewRecordStore(), memory.NewJobStore(), memory.NewEventLog(jobcodec.Events{}), memory.NewRefreshTokenStore(), nil).WithUsage(l)
	e := usage.Entry{ID: "u1", OrgID: "o", JobID: "j", Model: "p::m", Outcome: usage.OK, CreatedAt: time.Now()}
	err := u.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		is.NoErr(r.Usage.AppendUsage(ctx, []usage.Entry{e}))
		return errors.New("roll back")
	})
	is.True(err != nil)
	got, err := l.ListUsage(ctx, "o", time.Time{}, time.Now().Add(time.Hour))
	is.NoErr(err)
	is.Equal(len(got), 0)
	is.NoErr(u.InTx(ctx, func(ctx context.Context, r ports.Repos) error { return r.Usage.AppendUsage(ctx, []usage.Entry{e}) }))
	got, err = l.ListUsage(ctx, "o", time.Time{}, time.Now().Add(time.Hour))
	is.NoErr(err)
	is.Equal(len(got), 1)
}

func TestDatabaseStore(t *testing.T) {
	contract.RunDatabaseStore(t, func(*testing.T) contract.DatabaseFixture {
		s := memory.NewSyncStore()
		f := newUoW(nil)
		return contract.DatabaseFixture{Store: s, Feed: s, UoW: f.UoW.(*memory.UnitOfWork).WithSync(s)}
	})
}
