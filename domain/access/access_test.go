package access_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
)

func TestAuthorizeCategory(t *testing.T) {
	rw := access.DefaultScopes()
	ro := []access.Scope{access.ScopeRead}
	p := func(r access.Role, scopes []access.Scope) *access.Principal {
		return &access.Principal{OrgID: "o", Role: r, Scopes: scopes}
	}
	admin := &access.Principal{OrgID: "o", Role: access.Operator, Scopes: rw, SysAdmin: true}
	tests := []struct {
		name string
		p    *access.Principal
		cat  access.Category
		need access.Scope
		want error
	}{
		{"public without principal", nil, access.CatPublic, access.ScopeWrite, nil},
		{"no principal", nil, access.CatRecords, access.ScopeRead, access.ErrUnauthenticated},
		{"operator reads records", p(access.Operator, rw), access.CatRecords, access.ScopeRead, nil},
		{"operator enriches", p(access.Operator, rw), access.CatEnrichment, access.ScopeWrite, nil},
		{"operator cannot write schemas", p(access.Operator, rw), access.CatSchemaWrite, access.ScopeWrite, access.ErrForbidden},
		{"editor writes schemas", p(access.Editor, rw), access.CatSchemaWrite, access.ScopeWrite, nil},
		{"editor cannot manage keys", p(access.Editor, rw), access.CatAPIKeys, access.ScopeRead, access.ErrForbidden},
		{"owner manages keys", p(access.Owner, rw), access.CatAPIKeys, access.ScopeWrite, nil},
		{"read-only key cannot write", p(access.Owner, ro), access.CatSchemaWrite, access.ScopeWrite, access.ErrForbidden},
		{"read-only key reads", p(access.Operator, ro), access.CatSchemaRead, access.ScopeRead, nil},
		{"owner is not sysadmin", p(access.Owner, rw), access.CatSysAdmin, access.ScopeRead, access.ErrForbidden},
		{"sysadmin", admin, access.CatSysAdmin, access.ScopeRead, nil},
		{"sysadmin passes role checks", admin, access.CatUsers, access.ScopeWrite, nil},
		{"unknown role", p(access.Role("boss"), rw), access.CatRecords, access.ScopeRead, access.ErrForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := access.AuthorizeCategory(tt.p, tt.cat, tt.need)
			if tt.want == nil {
				is.NoErr(err)
				return
			}
			is.True(errors.Is(err, tt.want))
		})
	}
}

func TestRoleOrder(t *testing.T) {
	is := is.New(t)
	is.True(access.Owner.AtLeast(access.Editor))
	is.True(access.Editor.AtLeast(access.Operator))
	is.True(!access.Operator.AtLeast(access.Editor))
	is.NoErr(access.CheckKeyRole(access.Owner, access.Owner))
	is.True(errors.Is(access.CheckKeyRole(access.Editor, access.Owner), access.ErrRoleAboveCreator))
	is.NoErr(access.CheckKeyRole(access.Editor, access.Operator))
}

func TestKeyFormat(t *testing.T) {
	is := is.New(t)
	k, err := access.NewKey()
	is.NoErr(err)
	is.True(strings.HasPrefix(k, "ent_"))
	prefix, hash, err := access.ParseKey(k)
	is.NoErr(err)
	is.Equal(prefix, k[:12])
	is.Equal(len(hash), 64)
	is.True(access.HashesEqual(hash, access.HashKey(k)))
	k2, _ := access.NewKey()
	is.True(k != k2)
	for _, bad := range []string{"", "ent_", "xxx_" + k[4:], k + "a", k[:len(k)-1], "ent_" + strings.Repeat("!", 43)} {
		_, _, err := access.ParseKey(bad)
		is.True(errors.Is(err, access.ErrMalformedKey))
	}
}

func TestKeyUsable(t *testing.T) {
	is := is.New(t)
	now := time.Now()
	past, soon, later := now.Add(-time.Second), now.Add(6*24*time.Hour), now.Add(8*24*time.Hour)
	is.NoErr((&access.APIKey{}).Usable(now))
	is.True((&access.APIKey{ExpiresAt: &past}).Usable(now) != nil)
	is.True((&access.APIKey{RevokedAt: &past}).Usable(now) != nil)
	is.True((&access.APIKey{ExpiresAt: &soon}).ExpiringSoon(now))
	is.True(!(&access.APIKey{ExpiresAt: &later}).ExpiringSoon(now))
	is.True(!(&access.APIKey{ExpiresAt: &past}).ExpiringSoon(now))
}

func FuzzParseKey(f *testing.F) {
	k, _ := access.NewKey()
	for _, s := range []string{k, "", "ent_", "ent_" + strings.Repeat("A", 43), "ent_" + strings.Repeat("=", 43)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		prefix, hash, err := access.ParseKey(s)
		if err != nil {
			return
		}
		if prefix != s[:12] || hash != access.HashKey(s) {
			t.Fatalf("inconsistent parse of %q", s)
		}
	})
}
