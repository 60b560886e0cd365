package access

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// KeyPrefix starts every access key.
const KeyPrefix = "ent_"

// PrefixLen is how many leading characters of a key are stored in plain text.
const PrefixLen = 12

// ExpiringSoonWindow is how close to its expiry a key is flagged in listings.
const ExpiringSoonWindow = 7 * 24 * time.Hour

// keyBodyLen is the base64url length of 32 random bytes without padding.
const keyBodyLen = 43

// ErrMalformedKey is returned for a string that cannot be an access key.
var ErrMalformedKey = errors.New("malformed access key")

// NewKey returns a fresh access key: ent_ followed by 32 random bytes in
// base64url.
func NewKey() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// ParseKey checks the shape of a presented key and returns its stored prefix
// and SHA-256 hash (hex).
func ParseKey(key string) (prefix, hash string, err error) {
	if len(key) != len(KeyPrefix)+keyBodyLen || !strings.HasPrefix(key, KeyPrefix) {
		return "", "", ErrMalformedKey
	}
	if _, err := base64.RawURLEncoding.DecodeString(key[len(KeyPrefix):]); err != nil {
		return "", "", ErrMalformedKey
	}
	return key[:PrefixLen], HashKey(key), nil
}

// HashKey returns the hex SHA-256 of a key, the only form in which it is stored.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// HashesEqual compares two hex hashes in constant time.
func HashesEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// APIKey is a stored access key: an organization key (Role set, UserID empty
// or the creator) or a legacy user key (Legacy, role inherited at request time).
type APIKey struct {
	ID        string
	OrgID     string
	CreatedBy string // user id of the creator
	// Legacy keys are tied to CreatedBy and inherit that user's role.
	Legacy     bool
	Name       string
	Role       Role // empty for legacy keys
	Scopes     []Scope
	Prefix     string
	Hash       string
	ExpiresAt  *time.Time
	CreatedAt  time.Time
	RevokedAt  *time.Time
	LastUsedAt *time.Time
	UseCount   int64
}

// Usable reports whether the key may authenticate at now.
func (k *APIKey) Usable(now time.Time) error {
	if k.RevokedAt != nil {
		return errors.New("access key revoked")
	}
	if k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		return errors.New("access key expired")
	}
	return nil
}

// ExpiringSoon reports whether the key expires within ExpiringSoonWindow.
func (k *APIKey) ExpiringSoon(now time.Time) bool {
	return k.ExpiresAt != nil && k.ExpiresAt.After(now) && k.ExpiresAt.Sub(now) <= ExpiringSoonWindow
}

// CheckKeyRole enforces that a key never outranks its creator.
func CheckKeyRole(creator, requested Role) error {
	if !requested.Valid() {
		return errors.New("unknown role")
	}
	if requested.level() > creator.level() {
		return ErrRoleAboveCreator
	}
	return nil
}
