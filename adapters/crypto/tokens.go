package crypto

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/entityenrich/enrich/ports"
)

// ErrInvalidToken is wrapped by every Parse failure.
var ErrInvalidToken = errors.New("invalid token")

// Tokens issues and checks HS256 session tokens. The "typ" claim ("access"
// unless changed with WithType) stops a token of one kind from being
// accepted as another even if two kinds ever share a secret.
type Tokens struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time
	typ    string
}

var _ ports.Tokens = (*Tokens)(nil)

// NewTokens returns a token signer. ttl applies when Issue is given no
// expiry; clock is the time source (time.Now when nil).
func NewTokens(secret []byte, ttl time.Duration, clock func() time.Time) *Tokens {
	if clock == nil {
		clock = time.Now
	}
	return &Tokens{secret: append([]byte(nil), secret...), ttl: ttl, now: clock, typ: "access"}
}

// WithType returns a copy that issues and accepts tokens of type typ
// ("refresh", say) instead of "access".
func (t *Tokens) WithType(typ string) *Tokens {
	c := *t
	c.typ = typ
	return &c
}

type claims struct {
	Org string `json:"org"`
	Typ string `json:"typ"`
	DB  string `json:"db,omitempty"`
	jwt.RegisteredClaims
}

// Issue signs a token for c. A zero c.ExpiresAt means now + ttl.
func (t *Tokens) Issue(c ports.TokenClaims) (string, error) {
	if len(t.secret) == 0 {
		return "", errors.New("crypto: token secret is empty")
	}
	if c.UserID == "" || c.OrgID == "" {
		return "", errors.New("crypto: token needs a user and an organization")
	}
	now := t.now()
	exp := c.ExpiresAt
	if exp.IsZero() {
		exp = now.Add(t.ttl)
	}
	if !exp.After(now) {
		return "", errors.New("crypto: token would be born expired")
	}
	jti := c.ID
	if jti == "" {
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			return "", fmt.Errorf("crypto: token id: %w", err)
		}
		jti = base64.RawURLEncoding.EncodeToString(id[:])
	}
	cl := claims{Org: c.OrgID, Typ: t.typ, DB: c.DatabaseID, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   c.UserID,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(exp),
		// A unique id lets the denylist name one token.
		ID: jti,
	}}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, cl).SignedString(t.secret)
	if err != nil {
		return "", fmt.Errorf("crypto: sign token: %w", err)
	}
	return s, nil
}

// Parse checks a token's signature, algorithm, expiry and type and returns
// its claims. Every failure wraps ErrInvalidToken.
func (t *Tokens) Parse(token string) (ports.TokenClaims, error) {
	if len(t.secret) == 0 {
		return ports.TokenClaims{}, fmt.Errorf("crypto: %w: token secret is empty", ErrInvalidToken)
	}
	p := jwt.NewParser(
		// Pinning the algorithm is what stops "alg": "none" and the
		// RS256-to-HS256 key confusion.
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithTimeFunc(t.now),
		// Replicas' clocks differ by a little; without leeway a token
		// issued by a replica running ahead is "used before issued" on
		// the next.
		jwt.WithLeeway(5*time.Second),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
	)
	var cl claims
	if _, err := p.ParseWithClaims(token, &cl, func(*jwt.Token) (any, error) { return t.secret, nil }); err != nil {
		return ports.TokenClaims{}, fmt.Errorf("crypto: %w: %w", ErrInvalidToken, err)
	}
	if cl.Typ != t.typ {
		return ports.TokenClaims{}, fmt.Errorf("crypto: %w: token type %q, want %q", ErrInvalidToken, cl.Typ, t.typ)
	}
	if cl.Subject == "" || cl.Org == "" {
		return ports.TokenClaims{}, fmt.Errorf("crypto: %w: token has no subject or organization", ErrInvalidToken)
	}
	return ports.TokenClaims{ID: cl.ID, UserID: cl.Subject, OrgID: cl.Org, ExpiresAt: cl.ExpiresAt.Time.UTC(), DatabaseID: cl.DB}, nil
}
