package app

import (
	"context"
	"errors"
	"strings"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

// ListMembers lists the organization's users.
func (s *AccessService) ListMembers(ctx context.Context, p *access.Principal) ([]*access.User, error) {
	if err := access.Authorize(p, access.ActListMembers); err != nil {
		return nil, err
	}
	us, err := s.Users.ListUsers(ctx, p.OrgID)
	for _, u := range us {
		u.SysAdmin = s.isSysAdmin(u)
	}
	return us, err
}

// NewMemberInput is a member an owner adds.
type NewMemberInput struct {
	Email    string
	Password string
	Role     access.Role
}

// AddMember creates a user in the caller's organization with a role.
func (s *AccessService) AddMember(ctx context.Context, p *access.Principal, in NewMemberInput) (*access.User, error) {
	if err := access.Authorize(p, access.ActAddMember); err != nil {
		return nil, err
	}
	email, err := checkCredentials(in.Email, in.Password)
	if err != nil {
		return nil, err
	}
	if !in.Role.Valid() {
		return nil, Invalid("role", "role must be owner, editor or operator")
	}
	hash, err := s.Passwords.Hash(in.Password)
	if err != nil {
		return nil, err
	}
	u := &access.User{ID: s.IDs.NewID(), OrgID: p.OrgID, Email: email, PasswordHash: hash, Role: in.Role,
		Status: access.UserActive, CreatedAt: s.Clock.Now()}
	if err := s.Users.CreateUser(ctx, u); err != nil {
		if errors.Is(err, ports.ErrConflict) {
			return nil, coded(ports.ErrConflict, "email_taken", "an account with this email exists")
		}
		return nil, err
	}
	s.Log.Info("member added", "org_id", p.OrgID, "user_id", u.ID, "role", u.Role, "by", p.UserID)
	return u, nil
}

// UpdateMember changes a member's role or status. Deactivation ends the
// member's sessions and legacy keys at once.
//
// The owner count and the change are one unit of work that first locks the
// organization, so member changes of one organization take turns: two owners
// demoting each other at once cannot leave it without an owner (the second
// sees one owner left and gets member_change_refused).
func (s *AccessService) UpdateMember(ctx context.Context, p *access.Principal, id string, c access.MemberChange) (*access.User, error) {
	if err := access.Authorize(p, access.ActUpdateMember); err != nil {
		return nil, err
	}
	var u *access.User
	err := s.inTx(ctx, func(ctx context.Context, r ports.Repos) error {
		if err := r.Orgs.LockOrg(ctx, p.OrgID); err != nil {
			return err
		}
		members, err := r.Users.ListUsers(ctx, p.OrgID)
		if err != nil {
			return err
		}
		owners := 0
		for _, m := range members {
			if m.Role == access.Owner && m.Active() {
				owners++
			}
		}
		u, err = r.Users.UpdateUser(ctx, p.OrgID, id, func(u *access.User) error {
			err := access.ApplyMemberChange(p.UserID, u, c, owners)
			switch {
			case errors.Is(err, access.ErrLastOwner), errors.Is(err, access.ErrSelf):
				return coded(ports.ErrConflict, "member_change_refused", "%v", err)
			case err != nil:
				return Invalid("role", "%v", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !u.Active() {
			return r.RefreshTokens.RevokeUserTokens(ctx, u.ID, s.Clock.Now())
		}
		return nil
	})
	if errors.Is(err, ports.ErrNotFound) {
		return nil, coded(ports.ErrNotFound, "not_found", "user %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	s.userChanged(ctx, u.ID)
	if !u.Active() {
		// Its user's status refuses the tokens too; the denylist says so
		// before any cached copy of the user is read.
		if err := s.denyUser(ctx, u.ID); err != nil {
			s.Log.Error("deny a deactivated member's access tokens", "user_id", u.ID, "err", err)
		}
	}
	s.Log.Info("member updated", "org_id", p.OrgID, "user_id", u.ID, "role", u.Role, "status", u.Status, "by", p.UserID)
	u.SysAdmin = s.isSysAdmin(u)
	return u, nil
}

// GrantSysAdmin sets the system-administrator flag of the user with email
// (enrich admin grant-sysadmin).
func (s *AccessService) GrantSysAdmin(ctx context.Context, email string, grant bool) (*access.User, error) {
	u, err := s.Users.GetUserByEmail(ctx, strings.ToLower(strings.TrimSpace(email)))
	if err != nil {
		return nil, err
	}
	u, err = s.Users.UpdateUser(ctx, u.OrgID, u.ID, func(u *access.User) error {
		u.SysAdmin = grant
		return nil
	})
	if err == nil {
		s.userChanged(ctx, u.ID)
	}
	return u, err
}
