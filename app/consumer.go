package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

// ConsumerService serves what a registration's consumer uses beside the
// feed: the database credential and its token exchange, the snapshot and
// the checksum.
type ConsumerService struct {
	Credentials ports.CredentialStore
	Snapshots   ports.SnapshotReader
	// Tokens signs the credentials' access tokens: its own token type, so
	// that a session token is never taken for one, nor one for a session.
	Tokens ports.Tokens
	// Denylist refuses the access tokens of a revoked credential at once
	// (nil: they last until they expire).
	Denylist ports.AccessDenylist
	Clock    ports.Clock
	IDs      ports.IDs
	Log      *slog.Logger
	// TokenTTL is how long an exchanged access token lasts.
	TokenTTL time.Duration

	mu   sync.Mutex
	seen map[string]time.Time // credential id -> last recorded use, here
}

// DefaultSyncTokenTTL is an exchanged access token's life when none is
// configured.
const DefaultSyncTokenTTL = 15 * time.Minute

// NewConsumerService returns the service on its ports.
func NewConsumerService(creds ports.CredentialStore, snaps ports.SnapshotReader, tokens ports.Tokens, deny ports.AccessDenylist,
	clock ports.Clock, ids ports.IDs, log *slog.Logger, ttl time.Duration) *ConsumerService {
	if ttl <= 0 {
		ttl = DefaultSyncTokenTTL
	}
	return &ConsumerService{Credentials: creds, Snapshots: snaps, Tokens: tokens, Denylist: deny, Clock: clock, IDs: ids,
		Log: log, TokenTTL: ttl, seen: map[string]time.Time{}}
}

var errBadSyncToken = coded(access.ErrUnauthenticated, "invalid_refresh_token",
	"invalid, expired or revoked database credential")

// CreateCredential mints the registration's credential, revoking (and
// denying the access tokens of) the one it replaces, and returns it with
// its refresh token, the only time that is shown.
func (s *ConsumerService) CreateCredential(ctx context.Context, p *access.Principal, databaseID string) (*dbsync.Credential, string, error) {
	if err := access.AuthorizeDatabase(p, access.ActCreateCredential, databaseID); err != nil {
		return nil, "", err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", err
	}
	token := dbsync.RefreshTokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	now := s.Clock.Now()
	c := &dbsync.Credential{ID: s.IDs.NewID(), OrgID: p.OrgID, DatabaseID: databaseID, Hash: access.HashKey(token),
		CreatedAt: now, UpdatedAt: now}
	old, err := s.Credentials.CreateCredential(ctx, c)
	if err != nil {
		return nil, "", err
	}
	if old != nil {
		s.denyTokens(ctx, old)
	}
	s.Log.Info("database credential created", "org_id", p.OrgID, "database_id", databaseID, "credential_id", c.ID,
		"replaced", old != nil)
	return c, token, nil
}

// GetCredential returns the registration's newest credential (nil when it
// never had one).
func (s *ConsumerService) GetCredential(ctx context.Context, p *access.Principal, databaseID string) (*dbsync.Credential, error) {
	if err := access.AuthorizeDatabase(p, access.ActGetCredential, databaseID); err != nil {
		return nil, err
	}
	return s.Credentials.LatestCredential(ctx, p.OrgID, databaseID)
}

// RevokeCredential revokes the registration's active credential and
// denies its live access tokens, so that it stops at once. Revoking when
// none is active changes nothing.
func (s *ConsumerService) RevokeCredential(ctx context.Context, p *access.Principal, databaseID string) error {
	if err := access.AuthorizeDatabase(p, access.ActDeleteCredential, databaseID); err != nil {
		return err
	}
	if _, err := s.Credentials.LatestCredential(ctx, p.OrgID, databaseID); err != nil {
		return err // another organization's registration: 404
	}
	c, err := s.Credentials.RevokeCredential(ctx, p.OrgID, databaseID, s.Clock.Now())
	if errors.Is(err, ports.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	s.denyTokens(ctx, c)
	s.Log.Info("database credential revoked", "org_id", p.OrgID, "database_id", databaseID, "credential_id", c.ID)
	return nil
}

// denyTokens denies the live access tokens of a revoked credential.
func (s *ConsumerService) denyTokens(ctx context.Context, c *dbsync.Credential) {
	if s.Denylist == nil {
		return
	}
	ts, err := s.Credentials.CredentialTokens(ctx, c.ID, s.Clock.Now())
	if err == nil {
		err = s.Denylist.Deny(ctx, ts)
	}
	if err != nil {
		s.Log.Error("deny the access tokens of a revoked database credential", "credential_id", c.ID, "err", err)
	}
}

// SyncToken is an exchanged access token.
type SyncToken struct {
	AccessToken  string
	ExpiresIn    time.Duration
	DatabaseID   string
	DatabaseName string
	Dialect      string
}

// Exchange turns a credential's refresh token into an access token.
func (s *ConsumerService) Exchange(ctx context.Context, refresh string, seen dbsync.Seen) (*SyncToken, error) {
	if !strings.HasPrefix(refresh, dbsync.RefreshTokenPrefix) || len(refresh) > access.MaxCredentialLen {
		return nil, errBadSyncToken
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	tok := access.DeniedToken{ID: base64.RawURLEncoding.EncodeToString(b[:]), ExpiresAt: now.Add(s.TokenTTL)}
	seen.At = now
	c, err := s.Credentials.ExchangeCredential(ctx, access.HashKey(refresh), seen.Clip(), tok)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, errBadSyncToken
	}
	if err != nil {
		return nil, err
	}
	s.noted(c.ID, now)
	at, err := s.Tokens.Issue(ports.TokenClaims{ID: tok.ID, UserID: c.ID, OrgID: c.OrgID, DatabaseID: c.DatabaseID,
		ExpiresAt: tok.ExpiresAt})
	if err != nil {
		return nil, err
	}
	return &SyncToken{AccessToken: dbsync.AccessTokenPrefix + at, ExpiresIn: s.TokenTTL, DatabaseID: c.DatabaseID,
		DatabaseName: c.DatabaseName, Dialect: dbsync.Dialect}, nil
}

// Authenticate turns a credential's access token into its principal: an
// operator with read and write scopes limited to its registration's feed
// (access.AuthorizeDatabase). Its use is recorded at most every
// dbsync.SeenEvery.
func (s *ConsumerService) Authenticate(ctx context.Context, token string, seen dbsync.Seen) (*access.Principal, error) {
	c, err := s.Tokens.Parse(strings.TrimPrefix(token, dbsync.AccessTokenPrefix))
	if err != nil || c.DatabaseID == "" || !dbsync.IsAccessToken(token) {
		return nil, errBadSyncToken
	}
	if s.Denylist != nil && s.Denylist.Denied(c.ID) {
		return nil, errBadSyncToken
	}
	now := s.Clock.Now()
	if s.due(c.UserID, now) {
		seen.At = now
		if err := s.Credentials.NoteCredentialSeen(ctx, c.UserID, seen.Clip()); err != nil {
			s.Log.Warn("record a database credential's use", "credential_id", c.UserID, "err", err)
		} else {
			s.noted(c.UserID, now)
		}
	}
	exp := c.ExpiresAt
	return &access.Principal{OrgID: c.OrgID, Role: access.Operator, Scopes: access.DefaultScopes(), DatabaseID: c.DatabaseID,
		ExpiresAt: &exp}, nil
}

// NoteAck records on the registration's credential the delta id its
// consumer acknowledged (called by the feed's ack after it succeeded; only
// a credential's own acks count).
func (s *ConsumerService) NoteAck(ctx context.Context, p *access.Principal, upTo int64) {
	if p == nil || p.DatabaseID == "" {
		return
	}
	if err := s.Credentials.NoteCredentialApplied(ctx, p.DatabaseID, upTo); err != nil {
		s.Log.Warn("record a database credential's ack", "database_id", p.DatabaseID, "err", err)
	}
}

func (s *ConsumerService) due(id string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return now.Sub(s.seen[id]) >= dbsync.SeenEvery
}

func (s *ConsumerService) noted(id string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) > 10000 {
		clear(s.seen)
	}
	s.seen[id] = at
}
