// Package job holds the lifecycle of an asynchronous LLM job: its states, the
// transitions between them and the events a job emits while it runs.
package job

import (
	"errors"
	"fmt"
	"time"

	"github.com/entityenrich/enrich/domain/quota"
	"github.com/entityenrich/enrich/domain/text"
)

// State is where a job is in its lifecycle. Callers cannot invent states: use
// the constants below, or ParseState for stored values.
type State string

const (
	// Pending means the job is accepted and waits for capacity.
	Pending State = "pending"
	// Running means a worker is executing the job.
	Running State = "running"
	// Paused means the job waits for POST /api/llm/continue (for example after a
	// classification mismatch).
	Paused State = "paused"
	// Completed is terminal: the job finished successfully.
	Completed State = "completed"
	// Failed is terminal: an unrecoverable failure, with a typed error code.
	Failed State = "failed"
	// Cancelled is terminal: a client or the server cancelled the job.
	Cancelled State = "cancelled"
)

// States lists every state in lifecycle order.
func States() []State {
	return []State{Pending, Running, Paused, Completed, Failed, Cancelled}
}

// ParseState returns the state named s.
func ParseState(s string) (State, error) {
	for _, st := range States() {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown job state %q", s)
}

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool {
	return s == Completed || s == Failed || s == Cancelled
}

// Action is something that moves a job between states.
type Action string

const (
	ActionStart    Action = "start"
	ActionPause    Action = "pause"
	ActionContinue Action = "continue"
	ActionComplete Action = "complete"
	ActionFail     Action = "fail"
	ActionCancel   Action = "cancel"
)

// Actions lists every action.
func Actions() []Action {
	return []Action{ActionStart, ActionPause, ActionContinue, ActionComplete, ActionFail, ActionCancel}
}

// ErrTransition is returned (wrapped, with detail) when an action is not
// allowed in the job's current state.
var ErrTransition = errors.New("invalid job transition")

// transitions is SPEC.md's job table plus pending -> running and
// pending -> cancelled (REFERENCE.md), and nothing else. A failure while
// pending (for example the server shutting down before a worker picked the job
// up) is allowed so that no job stays pending forever.
var transitions = map[State]map[Action]State{
	Pending: {ActionStart: Running, ActionCancel: Cancelled, ActionFail: Failed},
	Running: {ActionPause: Paused, ActionComplete: Completed, ActionFail: Failed, ActionCancel: Cancelled},
	Paused:  {ActionContinue: Running, ActionCancel: Cancelled, ActionFail: Failed},
}

// Next returns the state that action a leads to from s.
func Next(s State, a Action) (State, error) {
	if next, ok := transitions[s][a]; ok {
		return next, nil
	}
	if s.Terminal() {
		return s, fmt.Errorf("%w: job is already %s and cannot %s", ErrTransition, s, a)
	}
	return s, fmt.Errorf("%w: cannot %s a %s job", ErrTransition, a, s)
}

// Type names what a job does.
type Type string

const (
	TypeEnrichment Type = "enrichment"
	// TypeSampleGeneration generates sample objects of one entity type.
	TypeSampleGeneration Type = "sample_generation"
)

// ErrorCode is the typed reason carried by a failed event. Where SPEC.md is
// silent the values are the reference product's (model_output_invalid,
// provider_timeout, rate_limited, context_length_exceeded, model_retired).
type ErrorCode string

const (
	// CodeLLMUnavailable: the provider failed or could not be reached.
	CodeLLMUnavailable ErrorCode = "llm_unavailable"
	// CodeOutputInvalid: no schema-valid answer after every attempt.
	CodeOutputInvalid ErrorCode = "model_output_invalid"
	// CodeProviderTimeout: the provider did not answer in time.
	CodeProviderTimeout ErrorCode = "provider_timeout"
	// CodeRateLimited: the provider refused the call for its rate limit.
	CodeRateLimited ErrorCode = "rate_limited"
	// CodeContextLength: the prompt is longer than the model's context.
	CodeContextLength ErrorCode = "context_length_exceeded"
	// CodeModelRetired: the provider no longer serves the model.
	CodeModelRetired ErrorCode = "model_retired"
	// CodeSchemaInvalid: the job's schema no longer plans or compiles.
	CodeSchemaInvalid ErrorCode = "schema_invalid"
	// CodeInterrupted: the job's workers stopped too many times.
	CodeInterrupted ErrorCode = "interrupted"
	// CodeShutdown: the server stopped while the job ran.
	CodeShutdown ErrorCode = "shutdown"
	// CodeInternal: anything else.
	CodeInternal ErrorCode = "internal_error"
	// CodeNoUsableKey: the provider refused every key, or none was usable.
	CodeNoUsableKey ErrorCode = "no_usable_provider_key"
	// CodeStorage means the job's events, record or state could not be
	// stored (the store refused them, or stayed unreachable).
	CodeStorage ErrorCode = "storage_error"
	// CodeTooManyCalls: the job reached its cap of LLM calls
	// (ENRICH_MAX_CALLS_PER_JOB); the calls past it were not made.
	CodeTooManyCalls ErrorCode = "too_many_calls"
	// CodeQuotaCalls and CodeQuotaTokens: the organization's daily quota
	// of calls or tokens through the operator's keys was used up while the
	// job ran; the calls past it were not made.
	CodeQuotaCalls  ErrorCode = quota.CodeCallsPerDay
	CodeQuotaTokens ErrorCode = quota.CodeTokensPerDay
	// CodeAttachmentNotFound: an attachment the job names lost its stored
	// bytes before the job could read them.
	CodeAttachmentNotFound ErrorCode = "attachment_not_found"
	// CodeIncoherentAttachments: a sample or schema generation's
	// attachments describe unrelated kinds of things.
	CodeIncoherentAttachments ErrorCode = "incoherent_attachments"
)

// Codes lists every error code.
func Codes() []ErrorCode {
	return []ErrorCode{CodeLLMUnavailable, CodeOutputInvalid, CodeProviderTimeout, CodeRateLimited, CodeContextLength,
		CodeModelRetired, CodeNoUsableKey, CodeSchemaInvalid, CodeInterrupted, CodeShutdown, CodeInternal, CodeStorage,
		CodeTooManyCalls, CodeQuotaCalls, CodeQuotaTokens, CodeAttachmentNotFound, CodeIncoherentAttachments}
}

// messages are the fixed public texts of the codes: what a client is told
// instead of a provider's or a store's own words.
var messages = map[ErrorCode]string{
	CodeLLMUnavailable:        "the model's provider failed or could not be reached",
	CodeOutputInvalid:         "the model's output did not match the schema",
	CodeProviderTimeout:       "the model's provider did not answer in time",
	CodeRateLimited:           "the model's provider refused the call for its rate limit",
	CodeContextLength:         "the prompt is longer than the model's context window",
	CodeModelRetired:          "the model's provider no longer serves this model",
	CodeNoUsableKey:           "the model's provider refused every key, or none was usable",
	CodeSchemaInvalid:         "the job's schema can no longer be used",
	CodeInterrupted:           "the job was interrupted too many times",
	CodeShutdown:              "the server stopped while the job ran",
	CodeInternal:              "internal error",
	CodeStorage:               "the job's results could not be stored",
	CodeTooManyCalls:          "the job reached its limit of LLM calls",
	CodeQuotaCalls:            "the organization's daily quota of calls through the operator's provider keys is used up",
	CodeQuotaTokens:           "the organization's daily quota of tokens through the operator's provider keys is used up",
	CodeAttachmentNotFound:    "an attachment of the job has no stored bytes any more",
	CodeIncoherentAttachments: "the attachments describe unrelated kinds of things",
}

// Message is the code's fixed public text.
func (c ErrorCode) Message() string {
	if m, ok := messages[c]; ok {
		return m
	}
	return messages[CodeInternal]
}

// Job is one asynchronous unit of LLM work owned by an organization.
type Job struct {
	ID        string
	OrgID     string
	Type      Type
	State     State
	ErrorCode ErrorCode
	Error     string
	// Request is the job's input as JSON, kept so that the job can be
	// inspected and, later, resumed.
	Request   []byte
	Result    []byte
	CreatedAt time.Time
	UpdatedAt time.Time
	// HeartbeatAt is when the job last changed hands or renewed its lease.
	HeartbeatAt time.Time
	// Attempt is the fencing token: it grows by one each time a worker takes
	// the job (or a canceller ends it), and only the holder of the current
	// attempt may write the job's events, record and state.
	Attempt int
	// Owner names the replica whose worker holds the job; empty while no
	// worker does.
	Owner string
	// LeaseUntil is when the owner's claim lapses unless renewed. A job whose
	// lease lapsed may be taken over by another worker.
	LeaseUntil time.Time
	// PauseUntil is when a paused job's pause times out (zero unless
	// paused): past it, nobody may continue the job and it is cancelled.
	PauseUntil time.Time
	// Continues counts the pauses continued: each starts a new holder, which
	// is not an interruption (see Exhausted).
	Continues int
}

// ErrPaused is returned by Claim for a paused job: it waits for continue,
// and no worker may take it before.
var ErrPaused = errors.New("job is paused")

// PauseTimedOut is the reason of the cancellation of a pause nobody answered
// in time.
const PauseTimedOut = "pause timed out: nobody continued the job within its timeout_seconds"

// Pause ends the holder's run of a running job until a continue: the job
// becomes paused, nobody holds it (the lease is released), and its pause
// times out at until.
func (j *Job) Pause(until, now time.Time) error {
	if err := j.Apply(ActionPause, now); err != nil {
		return err
	}
	j.Owner, j.LeaseUntil, j.PauseUntil = "", time.Time{}, until
	return nil
}

// PauseLapsed reports whether the job is paused past its pause's timeout.
func (j *Job) PauseLapsed(now time.Time) bool {
	return j.State == Paused && !j.PauseUntil.IsZero() && !now.Before(j.PauseUntil)
}

// Continue moves a paused job whose pause has not timed out back to
// running, unheld, for the next worker to take.
func (j *Job) Continue(now time.Time) error {
	if j.PauseLapsed(now) {
		return fmt.Errorf("%w: the job's pause timed out at %s", ErrTransition, j.PauseUntil.UTC().Format(time.RFC3339))
	}
	if err := j.Apply(ActionContinue, now); err != nil {
		return err
	}
	j.PauseUntil = time.Time{}
	j.Continues++
	return nil
}

// ErrLeased is returned by Claim when another live worker holds the job.
var ErrLeased = errors.New("job is leased by another worker")

// ErrEnded is returned by Claim when the job already ended.
var ErrEnded = errors.New("job already ended")

// Claim makes owner the job's worker until now+ttl and bumps the fencing
// token. A pending job starts; a running or paused job whose lease lapsed is
// taken over (its previous worker died). A job held by a live lease of
// another owner is ErrLeased; an ended job is ErrEnded.
func (j *Job) Claim(owner string, now time.Time, ttl time.Duration) error {
	switch {
	case j.State.Terminal():
		return fmt.Errorf("%w: %s", ErrEnded, j.State)
	case j.State == Paused:
		return ErrPaused
	case j.Owner != owner && j.Leased(now):
		return fmt.Errorf("%w: %s until %s", ErrLeased, j.Owner, j.LeaseUntil.Format(time.RFC3339Nano))
	}
	if j.State == Pending {
		if err := j.Start(now); err != nil {
			return err
		}
	}
	j.Attempt++
	j.Owner, j.LeaseUntil, j.HeartbeatAt, j.UpdatedAt = owner, now.Add(ttl), now, now
	return nil
}

// Leased reports whether a worker's claim on the job is live at now.
func (j *Job) Leased(now time.Time) bool {
	return j.Owner != "" && now.Before(j.LeaseUntil)
}

// Lapsed reports whether the job is live and was held by a worker whose
// lease ended: the worker died (or lost the database), and another should
// take the job over.
func (j *Job) Lapsed(now time.Time) bool {
	return !j.State.Terminal() && j.Owner != "" && !j.Leased(now)
}

// Exhausted reports whether a job that nobody holds live has had max
// holders already (a continued pause's new holder not counted), so that it
// must fail instead of being taken again.
func (j *Job) Exhausted(max int, now time.Time) bool {
	return !j.State.Terminal() && !j.Leased(now) && j.Attempt-j.Continues >= max
}

// Unclaimed reports whether the job is running with nobody holding it, and
// has been since before cutoff: it was continued (a continue leaves it
// running and unheld for the next worker to claim) and no worker claimed it.
// A hand-off takes a dispatch, milliseconds; a job unclaimed for longer lost
// its dispatch and must be queued again.
func (j *Job) Unclaimed(cutoff time.Time) bool {
	return j.State == Running && j.Owner == "" && j.UpdatedAt.Before(cutoff)
}

// Requeue marks an unclaimed job (Unclaimed at cutoff) as queued again at
// now, so that other sweeps leave it alone for another grace period; any
// other job is ErrTransition.
func (j *Job) Requeue(cutoff, now time.Time) error {
	if !j.Unclaimed(cutoff) {
		return fmt.Errorf("%w: the job is %s (owner %q), not an unclaimed running job", ErrTransition, j.State, j.Owner)
	}
	j.UpdatedAt = now
	return nil
}

// Fence ends every worker's claim: the token moves on and the lease is
// cleared. A canceller calls it so that the running worker's later writes
// are refused.
func (j *Job) Fence(now time.Time) {
	j.Attempt++
	j.Owner, j.LeaseUntil, j.UpdatedAt = "", time.Time{}, now
}

// Holds reports whether a worker with this token still owns the job.
func (j *Job) Holds(attempt int) bool {
	return j.Attempt == attempt && !j.State.Terminal()
}

// Apply moves the job by action a, or returns an ErrTransition.
func (j *Job) Apply(a Action, now time.Time) error {
	next, err := Next(j.State, a)
	if err != nil {
		return err
	}
	j.State = next
	j.UpdatedAt = now
	return nil
}

// Start moves a pending job to running.
func (j *Job) Start(now time.Time) error {
	if err := j.Apply(ActionStart, now); err != nil {
		return err
	}
	j.HeartbeatAt = now
	return nil
}

// Complete records a successful result.
func (j *Job) Complete(result []byte, now time.Time) error {
	if err := j.Apply(ActionComplete, now); err != nil {
		return err
	}
	j.Result = result
	return nil
}

// Fail records an unrecoverable failure with its typed code; a message that
// no store would take (NUL, bytes that are not UTF-8) is kept escaped
// (text.Storable), so that the failure itself can be stored.
func (j *Job) Fail(code ErrorCode, msg string, now time.Time) error {
	if err := j.Apply(ActionFail, now); err != nil {
		return err
	}
	j.ErrorCode, j.Error = code, text.Storable(msg)
	return nil
}

// Cancel cancels a pending, running or paused job; its reason is kept as
// Fail keeps a message.
func (j *Job) Cancel(reason string, now time.Time) error {
	if err := j.Apply(ActionCancel, now); err != nil {
		return err
	}
	j.Error = text.Storable(reason)
	return nil
}
