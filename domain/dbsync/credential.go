package dbsync

import (
	"strings"
	"time"
)

// Credential is a registration's database credential: a refresh token,
// stored only as its hash, that a consumer exchanges for short-lived
// access tokens which may do nothing but the feed actions on this one
// registration (access.FeedActions, access.AuthorizeDatabase). A
// registration has at most one active credential: creating a new one
// revokes the old.
type Credential struct {
	ID         string
	OrgID      string
	DatabaseID string
	// DatabaseName is the registration's name as read with the credential
	// (not stored with it).
	DatabaseName string
	Hash         string // hex SHA-256 of the refresh token (access.HashKey)
	CreatedAt    time.Time
	UpdatedAt    time.Time
	RevokedAt    *time.Time
	// The last exchange or feed request made with it.
	LastSeenAt        *time.Time
	LastSeenIP        string
	LastSeenUserAgent string
	// LastApplyDeltaID is the highest delta id the consumer acknowledged
	// with it (nil before the first ack).
	LastApplyDeltaID *int64
}

// Credential statuses (WIRE.md §8.7 DatabaseCredentialResponse.status).
const (
	CredentialActive  = "active"
	CredentialRevoked = "revoked"
)

// Status is active or revoked.
func (c *Credential) Status() string {
	if c.RevokedAt != nil {
		return CredentialRevoked
	}
	return CredentialActive
}

// Seen is one use of a credential: when and from where.
type Seen struct {
	At        time.Time
	IP        string
	UserAgent string
}

// MaxSeenUserAgent bounds the user agent a credential keeps.
const MaxSeenUserAgent = 256

// Clip bounds what a Seen keeps.
func (s Seen) Clip() Seen {
	if len(s.UserAgent) > MaxSeenUserAgent {
		s.UserAgent = strings.ToValidUTF8(s.UserAgent[:MaxSeenUserAgent], "")
	}
	s.UserAgent = strings.ReplaceAll(s.UserAgent, "\x00", "")
	if len(s.IP) > 64 {
		s.IP = s.IP[:64]
	}
	return s
}

// SeenEvery is how often feed requests made with a credential move its
// last_seen_at (an exchange always does): often enough to tell a live
// consumer, rarely enough to add no write to most feed requests.
const SeenEvery = time.Minute

// Token prefixes. A refresh token is "eesr_" and 43 base64url characters;
// an access token is "eesa_" and a signed token, so that the server tells
// it from a session token and an access key before checking it.
const (
	RefreshTokenPrefix = "eesr_"
	AccessTokenPrefix  = "eesa_"
)

// IsAccessToken reports whether tok is (shaped like) a database credential's
// access token.
func IsAccessToken(tok string) bool { return strings.HasPrefix(tok, AccessTokenPrefix) }
