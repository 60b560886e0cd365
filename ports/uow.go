package ports

import (
	"context"
	"errors"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/usage"
)

// Repos are the repositories as seen from inside one unit of work: every
// write through them commits together, or none does.
type Repos struct {
	Orgs          OrgStore
	Users         UserStore
	Keys          APIKeyStore
	Schemas       SchemaStore
	Records       RecordStore
	Jobs          JobStore
	Events        EventLog
	RefreshTokens RefreshTokenStore
	// Usage is the LLM call ledger (nil when the store keeps none).
	Usage UsageLedger
	// Invitations are the registration invitations (nil when the store
	// keeps none).
	Invitations InvitationStore
	// Feed appends deltas to registrations' feeds (nil when the store
	// keeps none).
	Feed FeedWriter
	// Databases are the database registrations and their links (nil when
	// the store keeps none).
	Databases DatabaseStore
	// Entities writes the entity layer with its deltas (nil when the
	// store keeps none).
	Entities EntityWriter
	// Outbox queues schema events for the schemas' subscriptions (nil
	// when the store keeps none).
	Outbox EventQueue
	// Queue enqueues job runs that start only if the unit of work commits.
	Queue JobEnqueuer
	// Vocabulary writes what a concept merge changes besides the entity
	// layer (nil when the store keeps no vocabulary).
	Vocabulary VocabularyWriter
}

// VocabularyWriter is the semantic concept vocabulary as a unit of work
// writes it: a concept merge's steps (ConceptStore.MergeConcepts,
// ConceptLinks.RepointLinks, ConceptReviews.DropReviews, with their
// contracts), which commit with the entity redirect and the records'
// rewrite, or not at all.
type VocabularyWriter interface {
	MergeConcepts(ctx context.Context, orgID, winnerID, loserID string) (MergedConcept, error)
	RepointLinks(ctx context.Context, orgID, from, to string) (int, error)
	DropReviews(ctx context.Context, orgID string, conceptIDs []string) (int, error)
}

// UnitOfWork runs functions whose writes must agree.
type UnitOfWork interface {
	// InTx calls fn with repositories bound to one transaction. fn's writes
	// commit when it returns nil and are rolled back when it returns an error
	// (returned as it is) or panics. fn must use only the repositories it is
	// given, and may be called again when the store asks for a retry of a
	// serialization failure, so it must not have other side effects.
	InTx(ctx context.Context, fn func(ctx context.Context, r Repos) error) error
	// EndJob stores the end of a job by the worker that holds it: the job's
	// state, error and result, its records and its last events, all or
	// none. It is the one unit of work on every job's critical path, so a
	// store may do it in a single round trip. The end is refused with
	// ErrFenced, and nothing is written, unless the stored job is still in
	// state From under end.Job.Attempt. With end.Create the job is not
	// stored yet and is created as it ends (an existing id is ErrConflict).
	// Records and events that the store cannot hold are ErrInvalid; an
	// existing record id or event seq is ErrConflict.
	EndJob(ctx context.Context, end JobEnd) error
}

// JobEnd is what a job's holder writes when the job ends.
type JobEnd struct {
	// Job is the job as it ends; only its State, ErrorCode, Error, Result
	// and UpdatedAt are written (all of it with Create). Its Attempt is the
	// holder's fence.
	Job *job.Job
	// From is the state the holder left the job in.
	From job.State
	// Create says the job's row was never stored: a run that ended before
	// its create was written (Engine.SubmitAwaited) stores the job with its
	// end, in the same commit.
	Create  bool
	Records []*enrichment.Record
	Events  []job.Event
	// Usage is the run's LLM calls for the ledger, written whatever the
	// end (appended to Repos.Usage's ledger; a store without one drops
	// them).
	Usage []usage.Entry
	// Sync are the entity-layer writes of the end's records (written only
	// with the records): each entity row, its revision and its data
	// deltas commit with the end, or nothing of it does.
	Sync []EntityWrite
	// Concepts are the records' concept links and the reference counts
	// they add (written only with the records, in the end's commit).
	Concepts ConceptWrites
	// SchemaEvents are queued as deliveries to their schemas'
	// subscriptions in the end's commit (see EventQueue; a store without
	// an outbox drops them).
	SchemaEvents []SchemaEvent
}

// ErrUnavailable means the storage cannot be reached right now (an outage);
// the caller may try again later (HTTP 503 with Retry-After).
var ErrUnavailable = errors.New("storage unavailable")
