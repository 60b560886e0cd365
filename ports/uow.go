package ports

import (
	"context"
	"errors"
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
	// Queue enqueues job runs that start only if the unit of work commits.
	Queue JobEnqueuer
}

// UnitOfWork runs functions whose writes must agree.
type UnitOfWork interface {
	// InTx calls fn with repositories bound to one transaction. fn's writes
	// commit when it returns nil and are rolled back when it returns an error
	// (returned as it is) or panics. fn must use only the repositories it is
	// given, and may be called again when the store asks for a retry of a
	// serialization failure, so it must not have other side effects.
	InTx(ctx context.Context, fn func(ctx context.Context, r Repos) error) error
}

// ErrUnavailable means the storage cannot be reached right now (an outage);
// the caller may try again later (HTTP 503 with Retry-After).
var ErrUnavailable = errors.New("storage unavailable")
