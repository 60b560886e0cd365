package memory

import (
	"context"
	"sync"

	"github.com/entityenrich/enrich/ports"
)

// UnitOfWork serializes units of work over the memory stores. Enqueues are
// handed to the queue only after fn succeeds.
type UnitOfWork struct {
	mu    sync.Mutex
	repos ports.Repos
	queue ports.JobEnqueuer
}

var _ ports.UnitOfWork = (*UnitOfWork)(nil)

// NewUnitOfWork returns a unit of work over the given stores.
func NewUnitOfWork(orgs *OrgStore, users *UserStore, keys *APIKeyStore, schemas *SchemaStore, records *RecordStore,
	jobs *JobStore, events *EventLog, refresh *RefreshTokenStore, queue ports.JobEnqueuer) *UnitOfWork {
	return &UnitOfWork{repos: ports.Repos{Orgs: orgs, Users: users, Keys: keys, Schemas: schemas, Records: records,
		Jobs: jobs, Events: events, RefreshTokens: refresh}, queue: queue}
}

// SetQueue sets the queue that receives committed enqueues.
func (u *UnitOfWork) SetQueue(q ports.JobEnqueuer) { u.queue = q }

type bufferedQueue struct{ jobs []ports.QueuedJob }

func (b *bufferedQueue) Enqueue(_ context.Context, j ports.QueuedJob) error {
	b.jobs = append(b.jobs, j)
	return nil
}

// InTx calls fn with the stores; fn's enqueues are delivered if it succeeds.
func (u *UnitOfWork) InTx(ctx context.Context, fn func(ctx context.Context, r ports.Repos) error) error {
	u.mu.Lock()
	r := u.repos
	buf := &bufferedQueue{}
	r.Queue = buf
	err := fn(ctx, r)
	u.mu.Unlock()
	if err != nil {
		return err
	}
	for _, j := range buf.jobs {
		if u.queue != nil {
			if err := u.queue.Enqueue(ctx, j); err != nil {
				return err
			}
		}
	}
	return nil
}
