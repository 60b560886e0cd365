package ports

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/domain/usage"
)

// Sentinel errors. Adapters wrap them with detail; callers test with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid input")
)

// Clock tells the time. Tests use a fixed or stepping clock.
type Clock interface {
	Now() time.Time
}

// IDs makes unique identifiers.
type IDs interface {
	NewID() string
}

// OrgStore keeps organizations.
type OrgStore interface {
	CreateOrg(ctx context.Context, o *access.Organization) error
	GetOrg(ctx context.Context, id string) (*access.Organization, error)
	// LockOrg takes the organization's lock until the end of the unit of
	// work it runs in (UnitOfWork.InTx), so that units that check and change
	// the organization's membership (its last owner) run one after another.
	// Outside a unit of work it only checks that the organization exists.
	// Unknown id: ErrNotFound.
	LockOrg(ctx context.Context, id string) error
	// UpdateOrg loads the organization (locking it), calls fn and stores
	// what fn left when it returns nil (fn's error is returned as it is).
	// Its id and creation time never change.
	UpdateOrg(ctx context.Context, id string, fn func(*access.Organization) error) (*access.Organization, error)
}

// UserStore keeps users. Emails are unique across the service (ErrConflict).
type UserStore interface {
	CreateUser(ctx context.Context, u *access.User) error
	GetUser(ctx context.Context, id string) (*access.User, error)
	GetUserByEmail(ctx context.Context, email string) (*access.User, error)
	ListUsers(ctx context.Context, orgID string) ([]*access.User, error)
	// UpdateUser loads the user, calls fn, and stores the result atomically.
	UpdateUser(ctx context.Context, orgID, id string, fn func(*access.User) error) (*access.User, error)
}

// KeyUsage is one authenticated use of an access key, recorded in batches.
type KeyUsage struct {
	KeyID  string
	Count  int64
	LastAt time.Time
}

// APIKeyStore keeps access keys (only their prefix and hash).
type APIKeyStore interface {
	CreateKey(ctx context.Context, k *access.APIKey) error
	// FindKeysByPrefix returns every key whose stored prefix matches, revoked
	// or not; the caller compares hashes in constant time.
	FindKeysByPrefix(ctx context.Context, prefix string) ([]*access.APIKey, error)
	GetKey(ctx context.Context, orgID, id string) (*access.APIKey, error)
	ListKeys(ctx context.Context, orgID string) ([]*access.APIKey, error)
	UpdateKey(ctx context.Context, orgID, id string, fn func(*access.APIKey) error) (*access.APIKey, error)
	// RecordUsage adds counts and moves last-used times forward, many keys at once.
	RecordUsage(ctx context.Context, usage []KeyUsage) error
}

// RefreshTokenStore keeps refresh tokens by hash.
type RefreshTokenStore interface {
	CreateRefreshToken(ctx context.Context, t *access.RefreshToken) error
	// UseRefreshToken atomically marks the token with this hash used at
	// `at` (if it was not already) and returns it as it was before the call,
	// so a second use is seen as UsedAt != nil. Unknown hash: ErrNotFound.
	UseRefreshToken(ctx context.Context, hash string, at time.Time) (*access.RefreshToken, error)
	// RevokeFamily revokes every token of a family that is not revoked yet.
	RevokeFamily(ctx context.Context, familyID string, at time.Time) error
	// RevokeUserTokens revokes every token of a user (deactivation, logout
	// everywhere).
	RevokeUserTokens(ctx context.Context, userID string, at time.Time) error
	// FamilyAccessTokens returns the access tokens issued with the family's
	// refresh tokens that expire after `after`; UserAccessTokens the
	// user's. Revoking a session denies them (AccessDenylist).
	FamilyAccessTokens(ctx context.Context, familyID string, after time.Time) ([]access.DeniedToken, error)
	UserAccessTokens(ctx context.Context, userID string, after time.Time) ([]access.DeniedToken, error)
}

// Invalidations tells every instance of the service that a cached object
// changed (an access key revoked or re-roled, a user changed), so that
// caches drop it.
type Invalidations interface {
	// Publish announces a change of the object kind/id to all instances.
	Publish(ctx context.Context, kind, id string) error
	// PublishAll announces changes of many objects of one kind at once.
	PublishAll(ctx context.Context, kind string, ids []string) error
	// Listen calls fn for every change announced by any instance until ctx
	// ends. A nil error return means the stream ended with ctx.
	Listen(ctx context.Context, fn func(kind, id string)) error
}

// SchemaStore keeps saved schemas.
type SchemaStore interface {
	CreateSchema(ctx context.Context, s *schema.Schema) error
	GetSchema(ctx context.Context, orgID, id string) (*schema.Schema, error)
	// GetSchema returns the schema, in the trash (DeletedAt set) or not.
	// ListSchemas returns a page of the live (not deleted) schemas, pinned
	// first, then most recently updated first, ties by id descending; its
	// cursors carry the pin (page.Cursor.Rank 1 for pinned) and UpdatedAt.
	// Total counts the live schemas.
	ListSchemas(ctx context.Context, orgID string, p page.Request) (page.Result[*schema.Schema], error)
	// ListDeletedSchemas returns up to limit schemas in the trash, most
	// recently deleted first.
	ListDeletedSchemas(ctx context.Context, orgID string, limit int) ([]*schema.Schema, error)
	// SchemaNames returns the names of the live schemas whose name starts
	// with prefix (byte-wise), for unique naming.
	SchemaNames(ctx context.Context, orgID, prefix string) ([]string, error)
	// FindSchemaByHash returns the oldest live schema of the organization
	// whose ContentHash is hash; ErrNotFound when there is none.
	FindSchemaByHash(ctx context.Context, orgID, hash string) (*schema.Schema, error)
	// DeleteSchema removes the schema for good (ErrNotFound when it is not
	// there). Its records stay.
	DeleteSchema(ctx context.Context, orgID, id string) error
	// UpdateSchema loads the schema id of organization orgID (locking it),
	// calls fn and stores what fn left when it returns nil; fn's error is
	// returned as it is and nothing is written. A schema's id, organization
	// and creation time never change.
	UpdateSchema(ctx context.Context, orgID, id string, fn func(*schema.Schema) error) (*schema.Schema, error)
}

// RecordFilter narrows a record listing; empty fields match everything.
type RecordFilter struct {
	Type     enrichment.RecordType
	SchemaID string
	JobID    string
	Model    string // composite key
	// CreatedFrom (inclusive) and CreatedBefore (exclusive) bound the
	// creation time when set.
	CreatedFrom, CreatedBefore *time.Time
	// IncludeDeleted lists soft-deleted records too.
	IncludeDeleted bool
}

// RecordDeletion is what DeleteRecords did: the ids it deleted now, and (a
// soft delete) the ids that were soft-deleted already. Ids of other
// organizations and unknown ids are in neither.
type RecordDeletion struct {
	Deleted        []string
	AlreadyDeleted []string
}

// AllOrgs, given as the organization to GetRecord, ListRecords or
// DeleteRecords, reaches every organization's records: the system
// administrators' all_orgs (the app authorizes it). No organization has
// this id.
const AllOrgs = "*"

// RecordStore keeps enrichment records. Reads and deletes are scoped to one
// organization, or to all with AllOrgs.
type RecordStore interface {
	CreateRecord(ctx context.Context, r *enrichment.Record) error
	GetRecord(ctx context.Context, orgID, id string) (*enrichment.Record, error)
	// ListRecords returns a page, newest first, with the total count of
	// records matching f.
	ListRecords(ctx context.Context, orgID string, f RecordFilter, p page.Request) (page.Result[*enrichment.Record], error)
	// DeleteRecordsBySchema removes every record of the organization made
	// under the schema and returns how many it removed.
	DeleteRecordsBySchema(ctx context.Context, orgID, schemaID string) (int, error)
	// DeleteRecords deletes the organization's records among ids: a soft
	// delete stamps deleted_at (at) on live ones, after which GetRecord
	// answers ErrNotFound and listings skip them; hard removes them, live or
	// soft-deleted. It is idempotent.
	DeleteRecords(ctx context.Context, orgID string, ids []string, hard bool, at time.Time) (RecordDeletion, error)
	// RepointConcept makes the organization's records (soft-deleted ones
	// too) that name the concept from name to instead, with its canonical
	// text (enrichment.Record.RepointConcept), and returns how many
	// changed: a concept merge's rewrite of its loser's records.
	RepointConcept(ctx context.Context, orgID, from, to, canonicalText string) (int, error)
}

// JobStore keeps jobs. Update owns the transaction: it loads the job (locking
// it), calls fn, and writes the result only when fn returns nil. A job's id,
// organization, type, request and creation time never change.
type JobStore interface {
	CreateJob(ctx context.Context, j *job.Job) error
	GetJob(ctx context.Context, orgID, id string) (*job.Job, error)
	UpdateJob(ctx context.Context, id string, fn func(*job.Job) error) (*job.Job, error)
	// RenewLeases moves the lease of the given jobs that owner still holds
	// to until, in one write, and returns the ids among them that owner no
	// longer holds (ended, cancelled, or taken over).
	RenewLeases(ctx context.Context, owner string, ids []string, until time.Time) (lost []string, err error)
	// ListLapsed returns up to limit live jobs held by a worker whose lease
	// ended before now (their holder died, or lost the database), oldest
	// lease first.
	ListLapsed(ctx context.Context, now time.Time, limit int) ([]*job.Job, error)
	// ListPauseLapsed returns up to limit paused jobs whose pause timed out
	// before or at now (job.Job.PauseLapsed), oldest deadline first.
	ListPauseLapsed(ctx context.Context, now time.Time, limit int) ([]*job.Job, error)
	// ListUnclaimed returns up to limit running jobs that nobody holds (no
	// owner, no lease) and that last changed before cutoff
	// (job.Job.Unclaimed): continued jobs whose dispatch was lost. Oldest
	// change first.
	ListUnclaimed(ctx context.Context, cutoff time.Time, limit int) ([]*job.Job, error)
	// CheckFences returns the jobs among fences whose current attempt is no
	// longer the one given (or that ended). Inside a unit of work it locks
	// the jobs it checks against a concurrent takeover until commit.
	CheckFences(ctx context.Context, fences []Fence) (lost []string, err error)
}

// Fence is a worker's claim on a job: the attempt it holds.
type Fence struct {
	JobID   string
	Attempt int
}

// EventLog is the durable, ordered log of every job's events.
type EventLog interface {
	// Append stores events; each carries its JobID and Seq. Appending a
	// (JobID, Seq) that exists is ErrConflict.
	Append(ctx context.Context, events []job.Event) error
	// List returns up to limit events of a job with Seq > after, in order.
	List(ctx context.Context, jobID string, after int64, limit int) ([]job.Event, error)
	// Last returns the highest Seq of a job's events (0 when none).
	Last(ctx context.Context, jobID string) (int64, error)
}

// EventCodec is the wire form of job events: the JSON object of an SSE data
// line and of a stored event, and stored events read back. The EventLog
// adapters store what Encode writes; the HTTP API streams what AppendJSON
// writes.
type EventCodec interface {
	// AppendJSON appends the event as one JSON object, keys sorted: its
	// payload's fields over its common block, with event (its type) and
	// job_id over both. It is the data of the event's SSE line.
	AppendJSON(b []byte, e job.Event) ([]byte, error)
	// Encode returns the event's data as stores keep it: the same fields
	// without event and job_id (nil for an event without any).
	Encode(e job.Event) ([]byte, error)
	// Decode reads the stored data of an event of type typ back into its
	// payload and common block (nil when it has none). Data it cannot type
	// comes back as a job.Raw payload that AppendJSON writes as it was.
	Decode(typ job.EventType, data []byte) (job.Payload, *job.Common, error)
}

// EventStream carries job events from the worker that owns a job to its
// followers on every replica. A worker's events are numbered here, written
// to the EventLog in batches under the worker's fence, and delivered to
// followers once durable, so a number a follower saw is never reused.
type EventStream interface {
	// Own starts numbering a job's events after seq after, for the worker
	// holding attempt. lost is called (once) when the job's events cannot
	// be written here any more: err wraps ErrFenced when another worker or a
	// canceller ended this worker's claim, ErrInvalid when the store refuses
	// the events, ErrUnavailable when writes kept failing too long.
	Own(jobID string, attempt int, after int64, lost func(err error))
	// Private says that nobody outside this process can follow an owned
	// job yet (its row is not stored): its end is not announced to other
	// instances. Own makes the job public again.
	Private(jobID string)
	// Publish queues an event of an owned job. It returns false when the
	// job is not owned here (any more) or was sealed.
	Publish(jobID string, d job.Draft) bool
	// Charge queues ledger entries of a job's answered LLM calls. Those of
	// an owned job are written with its next events, under no fence (a
	// call that was paid for is billed whoever ends the job), or handed to
	// its end by Seal; the others, and those of a job given up here, are
	// written on their own. The ledger skips ids it holds, so an entry
	// written twice is one row.
	Charge(jobID string, entries []usage.Entry)
	// Seal ends the job here: it waits for the job's in-flight write, then
	// returns the job's unwritten events followed by the drafts, numbered,
	// and its unwritten ledger entries. The caller stores them with the
	// job's last state in one unit of work and reports the outcome to
	// Sealed; entries it could not store it hands back to Charge.
	Seal(ctx context.Context, jobID string, drafts []job.Draft) ([]job.Event, []usage.Entry)
	// Sealed delivers the sealed events to followers when err is nil and
	// forgets the job here either way. The stream may keep the slice: the
	// caller does not write to it afterwards.
	Sealed(jobID string, events []job.Event, err error)
	// Delivered wakes followers of a job whose events were written by
	// someone else (a canceller here, or another replica's NOTIFY).
	Delivered(jobID string)
	// Written is told that this process wrote events of a job outside the
	// stream (a canceller's end, a failure the stream could not write): it
	// wakes the job's followers here and announces the events to other
	// instances.
	Written(jobID string)
	// Wait returns the job's durable events with Seq > after, blocking until
	// there is at least one or ctx ends. The slice may be shared with other
	// followers: read it, never write to its elements.
	Wait(ctx context.Context, jobID string, after int64) ([]job.Event, error)
	// Flush writes what is pending; Close stops the writer after a flush.
	Close()
}

// LLMRequest is one chat completion asked of a model.
type LLMRequest struct {
	Model    model.Key
	Messages []enrichment.Message
	// Schema is the JSON Schema the answer must satisfy; adapters use it for
	// structured output where the provider supports it.
	Schema     map[string]any
	SchemaName string
	// ResponseSchema asks for the provider's native JSON-schema response
	// channel where the model supports it (the request's
	// enable_response_schema); without it, or where unsupported, the answer
	// is prompted JSON, validated as always.
	ResponseSchema bool
	// Strict asks for strict (constrained) decoding on that channel where
	// supported (enable_strict_structured_output).
	Strict bool
	// WebSearch has the model use its provider's web search tool
	// (enable_web_search). Only models modelsel.CanSearch accepts can; an
	// adapter asked to search with a model that cannot refuses the call
	// (ErrInvalid) rather than answer without searching.
	WebSearch bool
	// Credential is the key that pays for the call; nil means the
	// provider's own configuration (see Credential.KeyID).
	Credential *Credential
	// OrgID is the organization the call is made for: provider limits
	// are counted per organization too.
	OrgID string
	// Queued, when set, is called once if the call has to wait for a free
	// slot of its provider before it goes out.
	Queued func()
	// Task names what the call is for (enrichment when empty; the others
	// are the LLMTask constants). Real providers ignore it; the sandbox
	// models answer each task in their own deterministic way.
	Task LLMTask
}

// LLMTask names what an LLM call is for.
type LLMTask string

// The tasks of LLM calls.
const (
	TaskEnrichment       LLMTask = ""
	TaskSchemaGeneration LLMTask = "schema_generation"
	TaskSchemaEdit       LLMTask = "schema_edit"
	TaskSampleGeneration LLMTask = "sample_generation"
	TaskAmbiguity        LLMTask = "ambiguity_analysis"
	// TaskArbitration chooses among several models' conflicting values.
	TaskArbitration LLMTask = "arbitration"
	// TaskClassification is enrichment's pre-flight classification call.
	TaskClassification LLMTask = "classification"
	// TaskAttachmentCoherence judges whether a sample or schema
	// generation's attachments describe one entity, several of one type,
	// or unrelated things.
	TaskAttachmentCoherence LLMTask = "attachment_coherence"
)

// LLMResponse is a model's answer and its token usage.
type LLMResponse struct {
	Text         string
	InputTokens  int
	OutputTokens int
	// Searches counts the web searches the provider's tool made (billed
	// per search, model.Price.PerSearch).
	Searches int
}

// Typed LLM failures; adapters wrap the provider's error in one of these.
var (
	ErrUnknownModel   = errors.New("unknown model")
	ErrLLMUnavailable = errors.New("llm unavailable")
	ErrLLMTimeout     = errors.New("llm timeout")
	ErrRateLimited    = errors.New("llm rate limited")
)

// LLM calls models by composite key.
type LLM interface {
	Generate(ctx context.Context, req LLMRequest) (LLMResponse, error)
}

// EmbedRequest asks an embedding model for the vectors of Texts.
type EmbedRequest struct {
	// Model is a provider's embedding model ("openai::text-embedding-3-small").
	Model model.Key
	Texts []string
	// Credential is the key that pays for the call, as in LLMRequest.
	Credential *Credential
}

// EmbedResponse holds one vector per text, in the request's order, and
// the input tokens the provider counted.
type EmbedResponse struct {
	Vectors     [][]float32
	InputTokens int
}

// Embedder turns texts into vectors. Failures are the LLM port's typed
// errors.
type Embedder interface {
	Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error)
}

// ModelCatalog lists the models enrichment may use.
type ModelCatalog interface {
	Models() []model.Info
	// Model returns the model with key k, or ErrUnknownModel.
	Model(k model.Key) (model.Info, error)
}

// Validator checks a decoded JSON value against a compiled schema. The error
// names the failing paths.
type Validator interface {
	Validate(v any) error
}

// SchemaCompiler compiles JSON Schema documents. It is the one door every
// schema goes through to be used, so it is where the schema limits hold:
// a document past Limits is refused with a *schema.TooComplexError
// (schema.ErrTooComplex) before it is parsed. A document that is not valid
// JSON Schema gives an error wrapping ErrInvalid with the validator's
// message. Compile stops when ctx ends, returning ctx.Err().
type SchemaCompiler interface {
	Compile(ctx context.Context, doc json.RawMessage) (Validator, error)
	// Limits are the limits Compile holds documents to, for the paths that
	// take a schema without compiling it (a duplicate, a publish).
	Limits() schema.Limits
}

// Passwords hashes and checks passwords.
type Passwords interface {
	Hash(password string) (string, error)
	Verify(hash, password string) (bool, error)
}

// TokenClaims is what a session token says about its holder.
type TokenClaims struct {
	// ID is the token's unique id (jti): Issue uses it when set and makes
	// one up otherwise; Parse returns it. A denylist names tokens by it.
	ID        string
	UserID    string
	OrgID     string
	ExpiresAt time.Time
	// DatabaseID is set on a database credential's access token (UserID
	// is then the credential's id).
	DatabaseID string
}

// Tokens issues and checks session tokens.
type Tokens interface {
	Issue(c TokenClaims) (token string, err error)
	Parse(token string) (TokenClaims, error)
}

// ErrCapacity is returned when the service has no room for more work now.
var ErrCapacity = errors.New("no capacity for the job")

// JobObserver is told when a job ends (metrics). Calls must not block.
type JobObserver interface {
	JobEnded(t job.Type, s job.State, code job.ErrorCode)
}
