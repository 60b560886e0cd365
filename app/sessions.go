package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

// RegisterInput is a registration: a new organization's owner, or, with an
// invitation token, the invitee (into the inviting organization, or as the
// owner of a new one).
type RegisterInput struct {
	Email, Password string
	// Organization names the new organization (ignored when the
	// invitation joins an existing one).
	Organization string
	// Invitation is the invitation's token (ENRICH_REGISTRATION=invite
	// needs one).
	Invitation string
}

// Register creates an organization, its owner and the owner's first session
// (RegisterWith without an invitation).
func (s *AccessService) Register(ctx context.Context, email, password, orgName string) (*Session, error) {
	return s.RegisterWith(ctx, RegisterInput{Email: email, Password: password, Organization: orgName})
}

var (
	errRegistrationClosed = coded(access.ErrForbidden, "registration_closed", "registration is closed on this service")
	errInvitationRequired = &Error{Kind: access.ErrForbidden, Code: "invitation_required", Field: "invitation_token",
		Detail: "registration needs an invitation on this service"}
	errInvitationInvalid = &Error{Kind: ports.ErrInvalid, Code: "invitation_invalid", Field: "invitation_token",
		Detail: "invitation_token is not a valid invitation"}
	errInvitationUsed = coded(ports.ErrConflict, "invitation_used", "the invitation has been used")
)

// invitationError maps why an invitation cannot be used to its answer.
func invitationError(err error) error {
	switch {
	case errors.Is(err, access.ErrInvitationUsed):
		return errInvitationUsed
	case errors.Is(err, access.ErrInvitationRevoked):
		return coded(ports.ErrConflict, "invitation_revoked", "the invitation has been revoked")
	case errors.Is(err, access.ErrInvitationExpired):
		return coded(ports.ErrConflict, "invitation_expired", "the invitation has expired")
	case errors.Is(err, access.ErrInvitationEmail):
		return &Error{Kind: access.ErrForbidden, Code: "invitation_email_mismatch", Field: "email",
			Detail: "the invitation is for another email address"}
	}
	return err
}

// RegisterWith registers per the registration mode: closed refuses; invite
// needs a usable invitation (a configured system administrator's email
// excepted, so that the first administrator can register); open takes an
// invitation when one is given. The invitation is used in the same unit of
// work as the account, conditionally: of two registrations racing with one
// invitation, one wins and the other gets invitation_used.
func (s *AccessService) RegisterWith(ctx context.Context, in RegisterInput) (*Session, error) {
	email, err := checkCredentials(in.Email, in.Password)
	if err != nil {
		return nil, err
	}
	inv, err := s.registrationInvitation(ctx, email, in.Invitation)
	if err != nil {
		return nil, err
	}
	orgName := strings.TrimSpace(in.Organization)
	if (inv == nil || inv.OrgID == "") && (orgName == "" || len(orgName) > MaxOrgNameLen) {
		return nil, Invalid("organization", "organization must be 1 to %d characters", MaxOrgNameLen)
	}
	// Checked before hashing, which is slow on purpose; the unique email
	// index still decides a race.
	if _, err := s.Users.GetUserByEmail(ctx, email); err == nil {
		return nil, errEmailTaken
	} else if !errors.Is(err, ports.ErrNotFound) {
		return nil, err
	}
	hash, err := s.Passwords.Hash(in.Password)
	if err != nil {
		return nil, err
	}
	var sess *Session
	err = s.inTx(ctx, func(ctx context.Context, r ports.Repos) error {
		var err error
		sess, err = s.register(ctx, r, email, hash, orgName, inv)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.Log.Info("user registered", "org_id", sess.Org.ID, "user_id", sess.User.ID, "role", sess.User.Role, "invited", inv != nil)
	return sess, nil
}

// registrationInvitation applies the registration mode and returns the
// invitation to use (nil: none).
func (s *AccessService) registrationInvitation(ctx context.Context, email, token string) (*access.Invitation, error) {
	switch s.Registration {
	case access.RegistrationClosed:
		return nil, errRegistrationClosed
	case access.RegistrationInvite:
		if token == "" && !s.SysAdminEmails[email] {
			return nil, errInvitationRequired
		}
	}
	if token == "" {
		return nil, nil
	}
	if s.Invitations == nil {
		return nil, errInvitationInvalid
	}
	inv, err := s.Invitations.GetInvitationByHash(ctx, access.HashKey(token))
	if errors.Is(err, ports.ErrNotFound) {
		return nil, errInvitationInvalid
	}
	if err != nil {
		return nil, err
	}
	if err := inv.Usable(email, s.Clock.Now()); err != nil {
		return nil, invitationError(err)
	}
	return inv, nil
}

// register writes the registration in r: the organization (unless the
// invitation joins one), the user, the invitation's use and the session.
func (s *AccessService) register(ctx context.Context, r ports.Repos, email, hash, orgName string, inv *access.Invitation) (*Session, error) {
	now := s.Clock.Now()
	var org *access.Organization
	role := access.Owner
	if inv != nil && inv.OrgID != "" {
		o, err := r.Orgs.GetOrg(ctx, inv.OrgID)
		if err != nil {
			return nil, err
		}
		org, role = o, inv.Role
	} else {
		org = &access.Organization{ID: s.IDs.NewID(), Name: orgName, CreatedAt: now}
		if err := r.Orgs.CreateOrg(ctx, org); err != nil {
			return nil, err
		}
	}
	u := &access.User{ID: s.IDs.NewID(), OrgID: org.ID, Email: email, PasswordHash: hash,
		Role: role, Status: access.UserActive, CreatedAt: now}
	if err := r.Users.CreateUser(ctx, u); err != nil {
		if errors.Is(err, ports.ErrConflict) {
			return nil, errEmailTaken
		}
		return nil, err
	}
	if inv != nil {
		store := r.Invitations
		if store == nil {
			store = s.Invitations
		}
		if err := store.UseInvitation(ctx, inv.ID, u.ID, now); errors.Is(err, ports.ErrConflict) || errors.Is(err, ports.ErrNotFound) {
			return nil, errInvitationUsed
		} else if err != nil {
			return nil, err
		}
	}
	return s.session(ctx, r.RefreshTokens, u, org, "")
}

// ErrTooManyAttempts is the kind of a throttled login (429).
var ErrTooManyAttempts = errors.New("too many attempts")

// Login checks a password and opens a session. Failures are counted per
// account and client address together (access.LoginThrottle): past the
// free ones, the next attempt from that address for that account waits a
// growing delay (ErrTooManyAttempts with RetryAfter), while the same
// account from another address is not held back.
func (s *AccessService) Login(ctx context.Context, email, password, clientIP string) (*Session, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	now := s.Clock.Now()
	key := access.ThrottleKey(email, clientIP)
	n, err := s.takeAttempt(ctx, key, now)
	if err != nil {
		return nil, err
	}
	sess, err := s.login(ctx, email, password)
	if errors.Is(err, access.ErrUnauthenticated) {
		// Counted already when the attempt was taken.
		if d := s.Throttle.Delay(n); d > 0 {
			s.Log.Warn("login delayed after repeated failures", "ip", clientIP, "failures", n, "delay_s", d.Seconds())
		}
		return nil, err
	}
	// The attempt was counted as a failure when it was taken: a success
	// forgets the pair's count (another error leaves it counted).
	if err != nil {
		return nil, err
	}
	if cerr := s.Failures.ClearLoginFailures(ctx, key); cerr != nil {
		s.Log.Warn("clear login failures", "err", cerr)
	}
	return sess, err
}

// takeAttempt admits a login attempt of key at now, or refuses it while
// the pair must wait (ErrTooManyAttempts with RetryAfter, not counted). An
// admitted attempt is counted as a failure in the same step as the
// decision (ports.LoginThrottleStore.TakeLoginAttempt), so that concurrent
// attempts cannot all pass on one read of the count. It returns the
// pair's count with it.
func (s *AccessService) takeAttempt(ctx context.Context, key string, now time.Time) (int, error) {
	for {
		f, err := s.Failures.LoginFailures(ctx, key)
		if err != nil {
			return 0, err
		}
		if wait := s.Throttle.Wait(f, now); wait > 0 {
			secs := int((wait + time.Second - 1) / time.Second)
			return 0, &Error{Kind: ErrTooManyAttempts, Code: "too_many_attempts", RetryAfter: time.Duration(secs) * time.Second,
				Detail: fmt.Sprintf("too many failed logins for this account from this address; try again in %d s", secs)}
		}
		ok, err := s.Failures.TakeLoginAttempt(ctx, key, f, now, s.Throttle.ForgetBefore(now))
		if err != nil {
			return 0, err
		}
		if ok {
			if s.Throttle.Forgotten(f, now) {
				return 1, nil
			}
			return f.Count + 1, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}

// revokeFamily revokes a session (a refresh-token family) and denies the
// access tokens issued in it at once.
func (s *AccessService) revokeFamily(ctx context.Context, familyID string, now time.Time) error {
	if err := s.RefreshTokens.RevokeFamily(ctx, familyID, now); err != nil {
		return err
	}
	if s.Denylist == nil {
		return nil
	}
	ts, err := s.RefreshTokens.FamilyAccessTokens(ctx, familyID, now)
	if err != nil {
		return err
	}
	return s.Denylist.Deny(ctx, ts)
}

// denyUser denies every live access token of a user (deactivation).
func (s *AccessService) denyUser(ctx context.Context, userID string) error {
	if s.Denylist == nil {
		return nil
	}
	ts, err := s.RefreshTokens.UserAccessTokens(ctx, userID, s.Clock.Now())
	if err != nil {
		return err
	}
	return s.Denylist.Deny(ctx, ts)
}

// PurgeExpired forgets what no longer matters: login failures quiet for
// longer than the throttle remembers them.
func (s *AccessService) PurgeExpired(ctx context.Context) error {
	return s.Failures.PurgeLoginFailures(ctx, s.Throttle.ForgetBefore(s.Clock.Now()))
}
