package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// NewInvitationInput is an invitation to issue.
type NewInvitationInput struct {
	// Email, when set, is the only address that may use it.
	Email string
	// Role in the caller's organization (default operator, the lowest);
	// ignored for a new organization, whose first user is its owner.
	Role *access.Role
	// ExpiresIn is its lifetime (0: access.DefaultInvitationTTL).
	ExpiresIn time.Duration
	// NewOrganization asks for an invitation to register a new
	// organization (system administrators only).
	NewOrganization bool
}

// CreateInvitation issues a single-use invitation and returns it with its
// token, the only clear copy (only its hash is stored).
func (s *AccessService) CreateInvitation(ctx context.Context, p *access.Principal, in NewInvitationInput) (*access.Invitation, string, error) {
	if err := access.Authorize(p, access.ActCreateInvitation); err != nil {
		return nil, "", err
	}
	if in.NewOrganization {
		if err := access.CheckNewOrgInvitation(p); err != nil {
			return nil, "", err
		}
	}
	inv, err := s.newInvitation(p, in)
	if err != nil {
		return nil, "", err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", err
	}
	token := "inv_" + base64.RawURLEncoding.EncodeToString(b[:])
	inv.Hash = access.HashKey(token)
	if s.Invitations == nil {
		return nil, "", errors.New("app: no invitation store")
	}
	if err := s.Invitations.CreateInvitation(ctx, inv); err != nil {
		return nil, "", err
	}
	s.Log.Info("invitation issued", "org_id", p.OrgID, "invitation_id", inv.ID, "new_organization", inv.OrgID == "",
		"role", inv.Role, "by", creator(p))
	return inv, token, nil
}

// newInvitation validates in and returns the invitation without its hash.
func (s *AccessService) newInvitation(p *access.Principal, in NewInvitationInput) (*access.Invitation, error) {
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if email != "" {
		if _, err := checkCredentials(email, strings.Repeat("x", MinPasswordLen)); err != nil {
			return nil, err
		}
	}
	ttl := in.ExpiresIn
	if ttl == 0 {
		ttl = access.DefaultInvitationTTL
	}
	if ttl < access.MinInvitationTTL || ttl > access.MaxInvitationTTL {
		return nil, Invalid("expires_in_s", "expires_in_s must be between %d and %d", int(access.MinInvitationTTL.Seconds()),
			int(access.MaxInvitationTTL.Seconds()))
	}
	role, org := access.Operator, p.OrgID
	if in.NewOrganization {
		role, org = access.Owner, ""
	} else if in.Role != nil {
		if !in.Role.Valid() {
			return nil, Invalid("role", "role must be owner, editor or operator")
		}
		role = *in.Role
	}
	now := s.Clock.Now()
	return &access.Invitation{ID: s.IDs.NewID(), OrgID: org, Email: email, Role: role, CreatedBy: creator(p),
		CreatedAt: now, ExpiresAt: now.Add(ttl)}, nil
}

// creator names who acts: the user, or the organization key.
func creator(p *access.Principal) string {
	if p.UserID != "" {
		return p.UserID
	}
	return p.KeyID
}

// ListInvitations lists the caller's organization's invitations, newest
// first; with newOrgs, a system administrator's list of the invitations to
// register new organizations.
func (s *AccessService) ListInvitations(ctx context.Context, p *access.Principal, newOrgs bool, pr page.Request) (page.Result[*access.Invitation], error) {
	if err := access.Authorize(p, access.ActListInvitations); err != nil {
		return page.Result[*access.Invitation]{}, err
	}
	org := p.OrgID
	if newOrgs {
		if err := access.CheckNewOrgInvitation(p); err != nil {
			return page.Result[*access.Invitation]{}, err
		}
		org = ""
	}
	if s.Invitations == nil {
		return page.Result[*access.Invitation]{}, nil
	}
	return s.Invitations.ListInvitations(ctx, org, pr)
}

// RevokeInvitation revokes one of the organization's invitations (a system
// administrator's also a new-organization one); again is no error, another
// organization's is not found.
func (s *AccessService) RevokeInvitation(ctx context.Context, p *access.Principal, id string) error {
	if err := access.Authorize(p, access.ActRevokeInvitation); err != nil {
		return err
	}
	notFound := coded(ports.ErrNotFound, "not_found", "invitation %s not found", id)
	if s.Invitations == nil {
		return notFound
	}
	now := s.Clock.Now()
	_, err := s.Invitations.RevokeInvitation(ctx, p.OrgID, id, now)
	if errors.Is(err, ports.ErrNotFound) && p.SysAdmin {
		_, err = s.Invitations.RevokeInvitation(ctx, "", id, now)
	}
	if errors.Is(err, ports.ErrNotFound) {
		return notFound
	}
	if err == nil {
		s.Log.Info("invitation revoked", "org_id", p.OrgID, "invitation_id", id, "by", creator(p))
	}
	return err
}
