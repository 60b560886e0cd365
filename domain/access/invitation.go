package access

import (
	"errors"
	"fmt"
	"time"
)

// DeniedToken is a session access token revoked before its expiry: its id
// (jti) is refused until ExpiresAt, after which the token is dead anyway.
type DeniedToken struct {
	ID        string
	ExpiresAt time.Time
}

// Registration modes (ENRICH_REGISTRATION).
const (
	// RegistrationOpen lets anyone register a new organization.
	RegistrationOpen = "open"
	// RegistrationInvite needs a single-use invitation to register.
	RegistrationInvite = "invite"
	// RegistrationClosed refuses every registration.
	RegistrationClosed = "closed"
)

// Invitation lets one person register: into OrgID with Role, or, with OrgID
// empty (a system administrator's invitation), as the owner of a new
// organization. Only the token's hash is kept.
type Invitation struct {
	ID string
	// OrgID is the organization the invitee joins; empty: a new one.
	OrgID string
	// Email, when set, is the only address that may use the invitation.
	Email     string
	Role      Role
	Hash      string
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	UsedBy    string
	RevokedAt *time.Time
}

// Invitation limits and defaults.
const (
	DefaultInvitationTTL = 7 * 24 * time.Hour
	MinInvitationTTL     = time.Minute
	MaxInvitationTTL     = 30 * 24 * time.Hour
)

// Why an invitation cannot be used.
var (
	ErrInvitationUsed    = errors.New("invitation already used")
	ErrInvitationRevoked = errors.New("invitation revoked")
	ErrInvitationExpired = errors.New("invitation expired")
	ErrInvitationEmail   = errors.New("invitation is for another email address")
)

// Usable reports why the invitation cannot register email at now (nil: it
// can). email is normalised (lower case).
func (i *Invitation) Usable(email string, now time.Time) error {
	switch {
	case i.RevokedAt != nil:
		return ErrInvitationRevoked
	case i.UsedAt != nil:
		return ErrInvitationUsed
	case !now.Before(i.ExpiresAt):
		return ErrInvitationExpired
	case i.Email != "" && i.Email != email:
		return ErrInvitationEmail
	}
	return nil
}

// CheckNewOrgInvitation checks who may invite someone to register a new
// organization: system administrators only. Invitations into the caller's
// own organization follow ActCreateInvitation's rule (owners, like adding
// a member), with any role up to owner.
func CheckNewOrgInvitation(p *Principal) error {
	if p == nil {
		return ErrUnauthenticated
	}
	if !p.SysAdmin {
		return fmt.Errorf("%w: only system administrators invite new organizations", ErrForbidden)
	}
	return nil
}
