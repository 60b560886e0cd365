package access

import (
	"errors"
	"strings"
)

// ErrBadAuthorization is returned for an Authorization header that is not
// "Bearer <token>".
var ErrBadAuthorization = errors.New(`authorization header must be "Bearer <token>"`)

// MaxCredentialLen bounds a presented credential; longer ones are refused
// before any lookup.
const MaxCredentialLen = 4096

// ParseAuthorization returns the token of an "Authorization: Bearer <token>"
// header. The scheme is case-insensitive; the token must be one printable
// ASCII word.
func ParseAuthorization(h string) (string, error) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrBadAuthorization
	}
	tok = strings.TrimSpace(tok)
	if tok == "" || len(tok) > MaxCredentialLen {
		return "", ErrBadAuthorization
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c >= 0x7f {
			return "", ErrBadAuthorization
		}
	}
	return tok, nil
}

// IsAccessKey reports whether a presented credential has the access-key form
// (as opposed to a session token).
func IsAccessKey(cred string) bool { return strings.HasPrefix(cred, KeyPrefix) }
