package ports

import (
	"context"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/page"
)

// LoginThrottleStore keeps login failures per key (access.ThrottleKey),
// shared by every replica that shares the store. access.LoginThrottle
// decides what they mean.
type LoginThrottleStore interface {
	// LoginFailures returns key's failures (zero when none are kept).
	LoginFailures(ctx context.Context, key string) (access.LoginFailures, error)
	// AddLoginFailure counts a failure of key at `at`, atomically: from 1
	// again when the last one was not after forgetBefore. It returns the
	// new count.
	AddLoginFailure(ctx context.Context, key string, at, forgetBefore time.Time) (access.LoginFailures, error)
	// TakeLoginAttempt counts an attempt of key at `at` as a failure
	// (forgetBefore as AddLoginFailure), atomically and only if key's
	// failures are still seen (what LoginFailures returned): true when it
	// counted it, false when another attempt changed them first (read
	// them again and decide again). The attempt is admitted only if it
	// counted, so that concurrent attempts cannot share one allowance.
	TakeLoginAttempt(ctx context.Context, key string, seen access.LoginFailures, at, forgetBefore time.Time) (bool, error)
	// ClearLoginFailures forgets key's failures (a success).
	ClearLoginFailures(ctx context.Context, key string) error
	// PurgeLoginFailures forgets every key whose last failure is not after
	// before.
	PurgeLoginFailures(ctx context.Context, before time.Time) error
}

// DeniedTokenStore keeps the ids of access tokens revoked before their
// expiry, so that an instance that starts later still refuses them.
type DeniedTokenStore interface {
	// DenyTokens adds ts (an id already there keeps the later expiry).
	DenyTokens(ctx context.Context, ts []access.DeniedToken) error
	// DeniedTokens lists the entries that expire after `after`.
	DeniedTokens(ctx context.Context, after time.Time) ([]access.DeniedToken, error)
	// PurgeDeniedTokens deletes the entries that expire before `before`.
	PurgeDeniedTokens(ctx context.Context, before time.Time) error
}

// AccessDenylist refuses revoked access tokens by id. Denied is an
// in-memory lookup (it is on every request's path); Deny stores the
// entries and tells every instance.
type AccessDenylist interface {
	Deny(ctx context.Context, ts []access.DeniedToken) error
	Denied(id string) bool
}

// InvitationStore keeps registration invitations by the hash of their
// token.
type InvitationStore interface {
	// CreateInvitation stores inv; an existing id or hash is ErrConflict.
	CreateInvitation(ctx context.Context, inv *access.Invitation) error
	// GetInvitationByHash returns the invitation with this token hash
	// (ErrNotFound).
	GetInvitationByHash(ctx context.Context, hash string) (*access.Invitation, error)
	// UseInvitation marks the invitation usable at `at` used by userID, in
	// one conditional step: of two callers racing with one invitation,
	// exactly one gets nil; the other, and every use of an invitation that
	// is used, revoked or expired at `at`, gets ErrConflict. An unknown id
	// is ErrNotFound.
	UseInvitation(ctx context.Context, id, userID string, at time.Time) error
	// ListInvitations lists an organization's invitations, newest first
	// (orgID empty: the invitations to register new organizations).
	ListInvitations(ctx context.Context, orgID string, p page.Request) (page.Result[*access.Invitation], error)
	// RevokeInvitation revokes the organization's invitation at `at` (orgID
	// empty: a new-organization invitation) and returns it; revoking again
	// changes nothing. Another organization's is ErrNotFound.
	RevokeInvitation(ctx context.Context, orgID, id string, at time.Time) (*access.Invitation, error)
}
