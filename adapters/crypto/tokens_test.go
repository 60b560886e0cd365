package crypto

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/ports"
)

var (
	secret = []byte("0123456789abcdef0123456789abcdef")
	t0     = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
)

func fixed(t time.Time) func() time.Time { return func() time.Time { return t } }

func TestTokensRoundTrip(t *testing.T) {
	is := is.New(t)
	tk := NewTokens(secret, 15*time.Minute, fixed(t0))
	s, err := tk.Issue(ports.TokenClaims{UserID: "u1", OrgID: "o1"})
	is.NoErr(err)
	c, err := tk.Parse(s)
	is.NoErr(err)
	is.True(len(c.ID) >= 16) // an id is made up when none is given
	c.ID = ""
	is.Equal(c, ports.TokenClaims{UserID: "u1", OrgID: "o1", ExpiresAt: t0.Add(15 * time.Minute)})
	// A given id is kept: the denylist names the token by it.
	s, err = tk.Issue(ports.TokenClaims{ID: "jti-1", UserID: "u1", OrgID: "o1"})
	is.NoErr(err)
	c, err = tk.Parse(s)
	is.NoErr(err)
	is.Equal(c.ID, "jti-1")

	s, err = tk.Issue(ports.TokenClaims{UserID: "u1", OrgID: "o1", ExpiresAt: t0.Add(time.Hour)})
	is.NoErr(err)
	c, err = tk.Parse(s)
	is.NoErr(err)
	is.Equal(c.ExpiresAt, t0.Add(time.Hour)) // explicit expiry wins over ttl

	var cl claims
	_, _, err = jwt.NewParser().ParseUnverified(s, &cl)
	is.NoErr(err)
	is.Equal(cl.Typ, "access")
	is.Equal(cl.Org, "o1")
	is.Equal(cl.Subject, "u1")
	is.True(cl.IssuedAt.Time.Equal(t0))
}

// sign makes a token with arbitrary header and claims.
func sign(t *testing.T, m jwt.SigningMethod, key any, c jwt.Claims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTokensParseRejects(t *testing.T) {
	tk := NewTokens(secret, 15*time.Minute, fixed(t0))
	good, err := tk.Issue(ports.TokenClaims{UserID: "u1", OrgID: "o1"})
	if err != nil {
		t.Fatal(err)
	}
	std := func(mod func(*claims)) claims {
		c := claims{Org: "o1", Typ: "access", RegisteredClaims: jwt.RegisteredClaims{
			Subject: "u1", IssuedAt: jwt.NewNumericDate(t0), ExpiresAt: jwt.NewNumericDate(t0.Add(time.Minute))}}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	parts := strings.Split(good, ".")
	tamperedPayload := func() string {
		raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
		raw = []byte(strings.Replace(string(raw), `"sub":"u1"`, `"sub":"u2"`, 1))
		return parts[0] + "." + base64.RawURLEncoding.EncodeToString(raw) + "." + parts[2]
	}()
	noneHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))

	tests := []struct {
		name  string
		token string
		tk    *Tokens
		want  error
	}{
		{"empty", "", tk, jwt.ErrTokenMalformed},
		{"garbage", "not.a.jwt", tk, jwt.ErrTokenMalformed},
		{"expired", good, NewTokens(secret, time.Minute, fixed(t0.Add(16*time.Minute))), jwt.ErrTokenExpired},
		{"issued in the future", good, NewTokens(secret, time.Minute, fixed(t0.Add(-time.Hour))), jwt.ErrTokenUsedBeforeIssued},
		{"wrong secret", good, NewTokens([]byte("another secret of thirty-two bytes!"), time.Minute, fixed(t0)), jwt.ErrTokenSignatureInvalid},
		{"tampered payload", tamperedPayload, tk, jwt.ErrTokenSignatureInvalid},
		{"tampered signature", parts[0] + "." + parts[1] + ".AAAA" + parts[2][4:], tk, jwt.ErrTokenSignatureInvalid},
		{"alg none", noneHeader + "." + parts[1] + ".", tk, jwt.ErrTokenSignatureInvalid},
		{"HS512", sign(t, jwt.SigningMethodHS512, secret, std(nil)), tk, jwt.ErrTokenSignatureInvalid},
		{"no expiry", sign(t, jwt.SigningMethodHS256, secret, std(func(c *claims) { c.ExpiresAt = nil })), tk, jwt.ErrTokenRequiredClaimMissing},
		{"refresh type", sign(t, jwt.SigningMethodHS256, secret, std(func(c *claims) { c.Typ = "refresh" })), tk, ErrInvalidToken},
		{"no type", sign(t, jwt.SigningMethodHS256, secret, std(func(c *claims) { c.Typ = "" })), tk, ErrInvalidToken},
		{"no org", sign(t, jwt.SigningMethodHS256, secret, std(func(c *claims) { c.Org = "" })), tk, ErrInvalidToken},
		{"no subject", sign(t, jwt.SigningMethodHS256, secret, std(func(c *claims) { c.Subject = "" })), tk, ErrInvalidToken},
		{"access token as refresh", good, tk.WithType("refresh"), ErrInvalidToken},
		{"empty secret", good, NewTokens(nil, time.Minute, fixed(t0)), ErrInvalidToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c, err := tt.tk.Parse(tt.token)
			is.Equal(c, ports.TokenClaims{})
			is.True(errors.Is(err, ErrInvalidToken))
			is.True(errors.Is(err, tt.want)) // the reason is kept
		})
	}
}

func TestTokensIssueRejects(t *testing.T) {
	tests := []struct {
		name string
		tk   *Tokens
		c    ports.TokenClaims
	}{
		{"empty secret", NewTokens(nil, time.Minute, fixed(t0)), ports.TokenClaims{UserID: "u", OrgID: "o"}},
		{"no user", NewTokens(secret, time.Minute, fixed(t0)), ports.TokenClaims{OrgID: "o"}},
		{"no org", NewTokens(secret, time.Minute, fixed(t0)), ports.TokenClaims{UserID: "u"}},
		{"already expired", NewTokens(secret, time.Minute, fixed(t0)), ports.TokenClaims{UserID: "u", OrgID: "o", ExpiresAt: t0}},
		{"zero ttl", NewTokens(secret, 0, fixed(t0)), ports.TokenClaims{UserID: "u", OrgID: "o"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			s, err := tt.tk.Issue(tt.c)
			is.True(err != nil)
			is.Equal(s, "")
		})
	}
}

func TestTokensWithType(t *testing.T) {
	is := is.New(t)
	rt := NewTokens(secret, time.Hour, fixed(t0)).WithType("refresh")
	s, err := rt.Issue(ports.TokenClaims{UserID: "u", OrgID: "o"})
	is.NoErr(err)
	_, err = rt.Parse(s)
	is.NoErr(err)
	_, err = NewTokens(secret, time.Hour, fixed(t0)).Parse(s)
	is.True(errors.Is(err, ErrInvalidToken)) // a refresh token is not an access token
}

func FuzzTokensParse(f *testing.F) {
	tk := NewTokens(secret, 15*time.Minute, fixed(t0))
	good, err := tk.Issue(ports.TokenClaims{UserID: "u1", OrgID: "o1"})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{good, "", ".", "..", "a.b.c", good + "x", strings.ToUpper(good),
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1In0.", "eyJhbGciOiJIUzI1NiJ9.bnVsbA.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := tk.Parse(s)
		if err != nil {
			if c != (ports.TokenClaims{}) {
				t.Fatal("claims with an error")
			}
			return
		}
		// Only a token this key signed may pass.
		if c.UserID == "" || c.OrgID == "" {
			t.Fatalf("accepted %q with empty claims", s)
		}
	})
}

func TestTokensClockSkew(t *testing.T) {
	is := is.New(t)
	s, err := NewTokens(secret, time.Minute, fixed(t0)).Issue(ports.TokenClaims{UserID: "u", OrgID: "o"})
	is.NoErr(err)
	_, err = NewTokens(secret, time.Minute, fixed(t0.Add(-3*time.Second))).Parse(s)
	is.NoErr(err) // a replica whose clock is a little behind accepts it
	_, err = NewTokens(secret, time.Minute, fixed(t0.Add(time.Minute+3*time.Second))).Parse(s)
	is.NoErr(err) // and one a little ahead, just after expiry
	_, err = NewTokens(secret, time.Minute, fixed(t0.Add(time.Minute+10*time.Second))).Parse(s)
	is.True(errors.Is(err, jwt.ErrTokenExpired))
}
