package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/mail"
	"strings"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

// AccessService registers organizations, signs users in, and turns
// credentials (access keys, session tokens) into principals.
type AccessService struct {
	// UoW runs the changes whose writes must agree (registration, member
	// changes) in one unit of work. Without one, they write through the
	// stores below one by one, with no atomicity.
	UoW       ports.UnitOfWork
	Orgs      ports.OrgStore
	Users     ports.UserStore
	Keys      ports.APIKeyStore
	Passwords ports.Passwords
	// Access signs session access tokens; refresh tokens are opaque and
	// stored hashed (RefreshTokens).
	Access ports.Tokens
	Clock  ports.Clock
	IDs    ports.IDs
	Log    *slog.Logger

	AccessTTL time.Duration
	// RefreshTokens keeps the rotating refresh tokens.
	RefreshTokens ports.RefreshTokenStore
	// Throttle is the rule of repeated login failures, kept in Failures
	// (per account and client address together).
	Throttle access.LoginThrottle
	Failures ports.LoginThrottleStore
	// Denylist refuses revoked access tokens (nil: none are revoked before
	// they expire).
	Denylist ports.AccessDenylist
	// Invitations keeps the invitations to register; Registration is the
	// mode (access.RegistrationOpen, Invite or Closed).
	Invitations  ports.InvitationStore
	Registration string
	// SysAdminEmails are users who are system administrators by configuration.
	SysAdminEmails map[string]bool
	// Cache serves the keys and users that authenticate requests, and is
	// told of every change to them (nil: read from Keys and Users).
	Cache ports.AuthCache

	usage usageBatch

	dummyOnce sync.Once
	dummy     string
}

// AccessConfig tunes the AccessService.
type AccessConfig struct {
	// AccessTTL is how long a session's access token lasts.
	AccessTTL time.Duration
	// SysAdminEmails are users who are system administrators by
	// configuration (compared without case or surrounding space).
	SysAdminEmails []string
	// Registration is access.RegistrationOpen (the zero value's meaning),
	// Invite or Closed.
	Registration string
	// Throttle is the login failures' rule (zero: the default).
	Throttle access.LoginThrottle
}

// AccessGuards are the stores and the denylist that protect sign-in and
// sessions.
type AccessGuards struct {
	Failures    ports.LoginThrottleStore
	Denylist    ports.AccessDenylist
	Invitations ports.InvitationStore
}

// NewAccessService returns the access service on its stores. uow and cache
// may be nil (see the fields).
func NewAccessService(uow ports.UnitOfWork, orgs ports.OrgStore, users ports.UserStore, keys ports.APIKeyStore,
	refresh ports.RefreshTokenStore, pw ports.Passwords, tokens ports.Tokens, cache ports.AuthCache, clock ports.Clock,
	ids ports.IDs, log *slog.Logger, cfg AccessConfig, g AccessGuards) *AccessService {
	admins := map[string]bool{}
	for _, e := range cfg.SysAdminEmails {
		if e = strings.ToLower(strings.TrimSpace(e)); e != "" {
			admins[e] = true
		}
	}
	s := &AccessService{UoW: uow, Orgs: orgs, Users: users, Keys: keys, RefreshTokens: refresh, Passwords: pw, Access: tokens,
		Cache: cache, Clock: clock, IDs: ids, Log: log, AccessTTL: cfg.AccessTTL,
		SysAdminEmails: admins, Throttle: cfg.Throttle, Failures: g.Failures, Denylist: g.Denylist, Invitations: g.Invitations,
		Registration: cfg.Registration}
	if s.Throttle == (access.LoginThrottle{}) {
		s.Throttle = access.DefaultLoginThrottle()
	}
	if s.Registration == "" {
		s.Registration = access.RegistrationOpen
	}
	return s
}

func (s *AccessService) dummyHash() string {
	s.dummyOnce.Do(func() {
		h, err := s.Passwords.Hash("not a password anyone has")
		if err != nil {
			s.Log.Error("hash dummy password", "err", err)
		}
		s.dummy = h
	})
	return s.dummy
}

// Session is what registration, login and refresh return.
type Session struct {
	User         *access.User
	Org          *access.Organization
	AccessToken  string
	RefreshToken string
	ExpiresIn    time.Duration
}

// Limits of account and access-key fields. openapi.yaml writes the same
// numbers; adapters/httpapi's TestLimitsAgreeWithGo checks them against these.
const (
	// MinPasswordLen is the shortest password accepted.
	MinPasswordLen = 8
	// MaxEmailLen is the longest email address (RFC 5321's path limit).
	MaxEmailLen = 320
	// MaxOrgNameLen bounds an organization's name.
	MaxOrgNameLen = 200
	// MaxKeyNameLen bounds an access key's name.
	MaxKeyNameLen = 200
	// MaxKeyExpiryDays bounds an access key's expires_in_days.
	MaxKeyExpiryDays = 3650
)

// checkCredentials validates a new account's email and password and returns
// the email normalised (trimmed, lower case).
func checkCredentials(email, password string) (string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > MaxEmailLen {
		return "", Invalid("email", "email is not a valid address")
	}
	if len(password) < MinPasswordLen {
		return "", Invalid("password", "password must have at least %d characters", MinPasswordLen)
	}
	return email, nil
}

var errEmailTaken = coded(ports.ErrConflict, "email_taken", "an account with this email exists")

// inTx runs fn in a unit of work or, without one, on the service's own
// stores (writes one by one, not atomic).
func (s *AccessService) inTx(ctx context.Context, fn func(ctx context.Context, r ports.Repos) error) error {
	if s.UoW != nil {
		return s.UoW.InTx(ctx, fn)
	}
	return fn(ctx, ports.Repos{Orgs: s.Orgs, Users: s.Users, Keys: s.Keys, RefreshTokens: s.RefreshTokens, Invitations: s.Invitations})
}

func (s *AccessService) login(ctx context.Context, email, password string) (*Session, error) {
	u, err := s.Users.GetUserByEmail(ctx, email)
	if err != nil && !errors.Is(err, ports.ErrNotFound) {
		return nil, err
	}
	// An unknown email costs the same hash as a known one, so that response
	// times do not tell which emails have accounts.
	hash := s.dummyHash()
	if u != nil {
		hash = u.PasswordHash
	}
	ok, err := s.Passwords.Verify(hash, password)
	if err != nil {
		return nil, err
	}
	ok = ok && u != nil
	if !ok || !u.Active() {
		return nil, coded(access.ErrUnauthenticated, "invalid_credentials", "invalid email or password")
	}
	org, err := s.Orgs.GetOrg(ctx, u.OrgID)
	if err != nil {
		return nil, err
	}
	return s.session(ctx, s.RefreshTokens, u, org, "")
}

var errBadRefresh = coded(access.ErrUnauthenticated, "invalid_token", "invalid, expired or revoked refresh token")

// RefreshSession exchanges a refresh token for a new session in the same
// family. A token used twice means it leaked: the whole family is revoked.
func (s *AccessService) RefreshSession(ctx context.Context, refresh string) (*Session, error) {
	now := s.Clock.Now()
	t, err := s.RefreshTokens.UseRefreshToken(ctx, access.HashKey(refresh), now)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, errBadRefresh
	}
	if err != nil {
		return nil, err
	}
	if t.UsedAt != nil {
		if err := s.revokeFamily(ctx, t.FamilyID, now); err != nil {
			return nil, err
		}
		s.Log.Warn("refresh token reused: session family revoked", "user_id", t.UserID, "family_id", t.FamilyID)
		return nil, errBadRefresh
	}
	if t.RevokedAt != nil || !now.Before(t.ExpiresAt) {
		return nil, errBadRefresh
	}
	u, err := s.Users.GetUser(ctx, t.UserID)
	if err != nil || !u.Active() || u.OrgID != t.OrgID {
		return nil, errBadRefresh
	}
	org, err := s.Orgs.GetOrg(ctx, u.OrgID)
	if err != nil {
		return nil, err
	}
	return s.session(ctx, s.RefreshTokens, u, org, t.FamilyID)
}

// Logout revokes the refresh token's family; revoking twice is not an error.
func (s *AccessService) Logout(ctx context.Context, refresh string) error {
	now := s.Clock.Now()
	t, err := s.RefreshTokens.UseRefreshToken(ctx, access.HashKey(refresh), now)
	if errors.Is(err, ports.ErrNotFound) {
		return errBadRefresh
	}
	if err != nil {
		return err
	}
	return s.revokeFamily(ctx, t.FamilyID, now)
}

const refreshTTL = 7 * 24 * time.Hour

// session issues an access token and a refresh token of family (a new family
// when empty), stored in tokens.
func (s *AccessService) session(ctx context.Context, tokens ports.RefreshTokenStore, u *access.User, org *access.Organization,
	family string) (*Session, error) {
	now := s.Clock.Now()
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	jti, exp := base64.RawURLEncoding.EncodeToString(id[:]), now.Add(s.AccessTTL)
	at, err := s.Access.Issue(ports.TokenClaims{ID: jti, UserID: u.ID, OrgID: u.OrgID, ExpiresAt: exp})
	if err != nil {
		return nil, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	rt := "rt_" + base64.RawURLEncoding.EncodeToString(b[:])
	if family == "" {
		family = s.IDs.NewID()
	}
	if err := tokens.CreateRefreshToken(ctx, &access.RefreshToken{ID: s.IDs.NewID(), FamilyID: family, UserID: u.ID,
		OrgID: u.OrgID, Hash: access.HashKey(rt), CreatedAt: now, ExpiresAt: now.Add(refreshTTL),
		AccessTokenID: jti, AccessExpiresAt: exp}); err != nil {
		return nil, err
	}
	u.SysAdmin = s.isSysAdmin(u)
	return &Session{User: u, Org: org, AccessToken: at, RefreshToken: rt, ExpiresIn: s.AccessTTL}, nil
}

func (s *AccessService) isSysAdmin(u *access.User) bool {
	return u.SysAdmin || s.SysAdminEmails[strings.ToLower(u.Email)]
}

var errBadCredentials = coded(access.ErrUnauthenticated, "invalid_credentials", "missing or invalid credentials")

// AuthenticateKey turns an access key into a principal. Every failure is the
// same 401 so that callers learn nothing about which keys exist.
func (s *AccessService) AuthenticateKey(ctx context.Context, key string) (*access.Principal, error) {
	prefix, hash, err := access.ParseKey(key)
	if err != nil {
		return nil, errBadCredentials
	}
	now := s.Clock.Now()
	find := s.Keys.FindKeysByPrefix
	if s.Cache != nil {
		find = s.Cache.FindKeysByPrefix
	}
	cands, err := find(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var k *access.APIKey
	for _, c := range cands {
		if access.HashesEqual(c.Hash, hash) {
			k = c
		}
	}
	if k == nil || k.Usable(now) != nil {
		return nil, errBadCredentials
	}
	p := &access.Principal{OrgID: k.OrgID, KeyID: k.ID, Role: k.Role, Scopes: k.Scopes, ExpiresAt: k.ExpiresAt}
	if k.Legacy {
		u, err := s.getUser(ctx, k.CreatedBy)
		if errors.Is(err, ports.ErrUnavailable) {
			return nil, err
		}
		if err != nil || !u.Active() || u.OrgID != k.OrgID {
			return nil, errBadCredentials
		}
		p.UserID, p.Role, p.SysAdmin = u.ID, u.Role, s.isSysAdmin(u)
	}
	s.usage.add(k.ID, now)
	return p, nil
}

// AuthenticateToken turns a session token into a principal.
func (s *AccessService) AuthenticateToken(ctx context.Context, token string) (*access.Principal, error) {
	c, err := s.Access.Parse(token)
	if err != nil {
		return nil, errBadCredentials
	}
	// Before the user, who may come from the cache: a revoked token is
	// refused whatever is cached (an in-memory lookup, no round trip).
	if s.Denylist != nil && s.Denylist.Denied(c.ID) {
		return nil, errBadCredentials
	}
	u, err := s.getUser(ctx, c.UserID)
	if errors.Is(err, ports.ErrUnavailable) {
		return nil, err
	}
	if err != nil || !u.Active() || u.OrgID != c.OrgID {
		return nil, errBadCredentials
	}
	return &access.Principal{OrgID: u.OrgID, UserID: u.ID, Role: u.Role, Scopes: access.DefaultScopes(), SysAdmin: s.isSysAdmin(u)}, nil
}

// Me returns the user behind a principal (nil for an organization key) and
// its organization.
func (s *AccessService) Me(ctx context.Context, p *access.Principal) (*access.User, *access.Organization, error) {
	if err := access.Authorize(p, access.ActMe); err != nil {
		return nil, nil, err
	}
	org, err := s.Orgs.GetOrg(ctx, p.OrgID)
	if err != nil {
		return nil, nil, err
	}
	if p.UserID == "" {
		return nil, org, nil
	}
	u, err := s.Users.GetUser(ctx, p.UserID)
	if err != nil {
		return nil, nil, err
	}
	u.SysAdmin = s.isSysAdmin(u)
	return u, org, nil
}

// Caller describes who calls: the organization's name and, for an access
// key, the key's name and the role it acts with (GET
// /api/enrichment/options echoes them, as the reference product does).
type Caller struct {
	OrgName          string
	KeyName, KeyRole string // empty for a session
}

// Caller returns the caller's description.
func (s *AccessService) Caller(ctx context.Context, p *access.Principal) (Caller, error) {
	if err := access.Authorize(p, access.ActMe); err != nil {
		return Caller{}, err
	}
	org, err := s.Orgs.GetOrg(ctx, p.OrgID)
	if err != nil {
		return Caller{}, err
	}
	c := Caller{OrgName: org.Name}
	if p.KeyID != "" {
		k, err := s.Keys.GetKey(ctx, p.OrgID, p.KeyID)
		if err != nil {
			return Caller{}, err
		}
		c.KeyName, c.KeyRole = k.Name, string(p.Role)
	}
	return c, nil
}

// getUser reads a user through the cache, when there is one.
func (s *AccessService) getUser(ctx context.Context, id string) (*access.User, error) {
	if s.Cache != nil {
		return s.Cache.GetUser(ctx, id)
	}
	return s.Users.GetUser(ctx, id)
}

// keyChanged and userChanged tell the cache, when there is one, that a
// change to a key or a user has committed: every such change through this
// service calls one before it answers.
func (s *AccessService) keyChanged(ctx context.Context, k *access.APIKey) {
	if s.Cache != nil {
		s.Cache.KeyChanged(ctx, k)
	}
}

func (s *AccessService) userChanged(ctx context.Context, id string) {
	if s.Cache != nil {
		s.Cache.UserChanged(ctx, id)
	}
}
