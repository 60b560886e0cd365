package contract

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

// RunOrgStore runs the OrgStore contract against the stores newStore returns.
func RunOrgStore(t *testing.T, newStore func(t *testing.T) ports.OrgStore) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, s ports.OrgStore)
	}{
		{"create and get round trip", func(t *testing.T, s ports.OrgStore) {
			is := is.New(t)
			o := &access.Organization{ID: newID("org"), Name: "Acme Ltd. — ünïcode", CreatedAt: at(0)}
			is.NoErr(s.CreateOrg(ctx, o))
			o.Name = "changed after create" // the store keeps its own copy
			got, err := s.GetOrg(ctx, o.ID)
			is.NoErr(err)
			is.Equal(got.ID, o.ID)
			is.Equal(got.Name, "Acme Ltd. — ünïcode")
			sameTime(t, "CreatedAt", got.CreatedAt, at(0))
		}},
		{"unknown id is not found", func(t *testing.T, s ports.OrgStore) {
			is := is.New(t)
			_, err := s.GetOrg(ctx, newID("org"))
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
		{"duplicate id is a conflict", func(t *testing.T, s ports.OrgStore) {
			is := is.New(t)
			o := &access.Organization{ID: newID("org"), Name: "one", CreatedAt: at(0)}
			is.NoErr(s.CreateOrg(ctx, o))
			err := s.CreateOrg(ctx, &access.Organization{ID: o.ID, Name: "two", CreatedAt: at(1)})
			is.True(errors.Is(err, ports.ErrConflict))
			got, err := s.GetOrg(ctx, o.ID)
			is.NoErr(err)
			is.Equal(got.Name, "one")
		}},
		{"lock checks that the organization exists", func(t *testing.T, s ports.OrgStore) {
			is := is.New(t)
			o := &access.Organization{ID: newID("org"), Name: "locked", CreatedAt: at(0)}
			is.NoErr(s.CreateOrg(ctx, o))
			is.NoErr(s.LockOrg(ctx, o.ID))
			is.NoErr(s.LockOrg(ctx, o.ID)) // outside a unit of work the lock does not outlive the call
			is.True(errors.Is(s.LockOrg(ctx, newID("org")), ports.ErrNotFound))
		}},
		{"update keeps model defaults; id and creation time never change", func(t *testing.T, s ports.OrgStore) {
			is := is.New(t)
			o := &access.Organization{ID: newID("org"), Name: "before", CreatedAt: at(0)}
			is.NoErr(s.CreateOrg(ctx, o))
			got, err := s.GetOrg(ctx, o.ID)
			is.NoErr(err)
			is.Equal(len(got.ModelDefaults), 0) // none until set
			want := map[string]string{"enrichment": "p::m", "sample_generation": "q::ü"}
			got, err = s.UpdateOrg(ctx, o.ID, func(o *access.Organization) error {
				o.Name, o.ModelDefaults = "after", want
				o.ID, o.CreatedAt = "other", at(9)
				return nil
			})
			is.NoErr(err)
			want["enrichment"] = "changed after update" // the store keeps its own copy
			again, err := s.GetOrg(ctx, o.ID)
			is.NoErr(err)
			for _, g := range []*access.Organization{got, again} {
				is.Equal(g.ID, o.ID)
				is.Equal(g.Name, "after")
				is.Equal(g.ModelDefaults, map[string]string{"enrichment": "p::m", "sample_generation": "q::ü"})
				sameTime(t, "CreatedAt", g.CreatedAt, at(0))
			}
			boom := errors.New("boom")
			_, err = s.UpdateOrg(ctx, o.ID, func(o *access.Organization) error { o.Name = "lost"; return boom })
			is.Equal(err, boom)
			again, err = s.GetOrg(ctx, o.ID)
			is.NoErr(err)
			is.Equal(again.Name, "after")
			_, err = s.UpdateOrg(ctx, newID("org"), func(*access.Organization) error { return nil })
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}

func newUser(orgID string, n int) *access.User {
	id := newID("usr")
	return &access.User{ID: id, OrgID: orgID, Email: "User." + id + "@Example.COM", PasswordHash: "$argon2id$v=19$" + id,
		Role: access.Editor, Status: access.UserActive, CreatedAt: at(n)}
}

func checkUser(t *testing.T, got, want *access.User) {
	t.Helper()
	is := is.NewRelaxed(t)
	is.Equal(got.ID, want.ID)
	is.Equal(got.OrgID, want.OrgID)
	is.Equal(got.Email, want.Email)
	is.Equal(got.PasswordHash, want.PasswordHash)
	is.Equal(got.Role, want.Role)
	is.Equal(got.Status, want.Status)
	is.Equal(got.SysAdmin, want.SysAdmin)
	sameTime(t, "CreatedAt", got.CreatedAt, want.CreatedAt)
}

func userIDs(us []*access.User) []string {
	var ids []string
	for _, u := range us {
		ids = append(ids, u.ID)
	}
	return ids
}

// RunUserStore runs the UserStore contract against the stores newStore
// returns.
func RunUserStore(t *testing.T, newStore func(t *testing.T) ports.UserStore) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, s ports.UserStore)
	}{
		{"create and get round trip", func(t *testing.T, s ports.UserStore) {
			is := is.New(t)
			u := newUser(newID("org"), 0)
			u.SysAdmin, u.Role, u.Status = true, access.Owner, access.UserDeactivated
			want := *u
			is.NoErr(s.CreateUser(ctx, u))
			u.Email = "changed@example.com"
			got, err := s.GetUser(ctx, u.ID)
			is.NoErr(err)
			checkUser(t, got, &want)
			got.Role = access.Operator // the caller's copy
			again, err := s.GetUser(ctx, u.ID)
			is.NoErr(err)
			is.Equal(again.Role, access.Owner)
		}},
		{"unknown id is not found", func(t *testing.T, s ports.UserStore) {
			is := is.New(t)
			_, err := s.GetUser(ctx, newID("usr"))
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
		{"email lookup ignores case", func(t *testing.T, s ports.UserStore) {
			is := is.New(t)
			u := newUser(newID("org"), 0)
			is.NoErr(s.CreateUser(ctx, u))
			for _, email := range []string{u.Email, strings.ToLower(u.Email), strings.ToUpper(u.Email)} {
				got, err := s.GetUserByEmail(ctx, email)
				is.NoErr(err)
				checkUser(t, got, u)
			}
			_, err := s.GetUserByEmail(ctx, "nobody."+newID("x")+"@example.com")
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
		{"duplicate email in any case is a conflict", func(t *testing.T, s ports.UserStore) {
			is := is.New(t)
			u := newUser(newID("org"), 0)
			is.NoErr(s.CreateUser(ctx, u))
			dup := newUser(newID("org"), 1)
			dup.Email = strings.ToUpper(u.Email)
			is.True(errors.Is(s.CreateUser(ctx, dup), ports.ErrConflict))
			_, err := s.GetUser(ctx, dup.ID)
			is.True(errors.Is(err, ports.ErrNotFound)) // nothing half-written
		}},
		{"duplicate id is a conflict", func(t *testing.T, s ports.UserStore) {
			is := is.New(t)
			u := newUser(newID("org"), 0)
			is.NoErr(s.CreateUser(ctx, u))
			dup := newUser(u.OrgID, 1)
			dup.ID = u.ID
			is.True(errors.Is(s.CreateUser(ctx, dup), ports.ErrConflict))
		}},
		{"list holds one organization's users, oldest first", func(t *testing.T, s ports.UserStore) {
			is := is.New(t)
			org, other := newID("org"), newID("org")
			u1, u2, u3 := newUser(org, 2), newUser(org, 1), newUser(org, 3)
			for _, u := range []*access.User{u1, u2, u3, newUser(other, 0)} {
				is.NoErr(s.CreateUser(ctx, u))
			}
			got, err := s.ListUsers(ctx, org)
			is.NoErr(err)
			is.Equal(userIDs(got), []string{u2.ID, u1.ID, u3.ID})
			checkUser(t, got[0], u2)
			none, err := s.ListUsers(ctx, newID("org"))
			is.NoErr(err)
			is.Equal(len(none), 0)
		}},
		{"update writes when fn returns nil", func(t *testing.T, s ports.UserStore) {
			is := is.New(t)
			u := newUser(newID("org"), 0)
			is.NoErr(s.CreateUser(ctx, u))
			got, err := s.UpdateUser(ctx, u.OrgID, u.ID, func(u *access.User) error {
				u.Role, u.Status, u.PasswordHash = access.Owner, access.UserDeactivated, "new hash"
				return nil
			})
			is.NoErr(err)
			want := *u
			want.Role, want.Status, want.PasswordHash = access.Owner, access.UserDeactivated, "new hash"
			checkUser(t, got, &want)
			stored, err := s.GetUser(ctx, u.ID)
			is.NoErr(err)
			checkUser(t, stored, &want)
		}},
		{"update returns fn's error and writes nothing", func(t *testing.T, s ports.UserStore) {
			is := is.New(t)
			u := newUser(newID("org"), 0)
			is.NoErr(s.CreateUser(ctx, u))
			got, err := s.UpdateUser(ctx, u.OrgID, u.ID, func(u *access.User) error {
				u.Role = access.Owner
				return errBoom
			})
			is.True(errors.Is(err, errBoom))
			is.Equal(got, nil)
			stored, err := s.GetUser(ctx, u.ID)
			is.NoErr(err)
			is.Equal(stored.Role, access.Editor)
		}},
		{"update of another organization's user is not found", func(t *testing.T, s ports.UserStore) {
			is := is.New(t)
			u := newUser(newID("org"), 0)
			is.NoErr(s.CreateUser(ctx, u))
			for _, c := range []struct{ org, id string }{{newID("org"), u.ID}, {u.OrgID, newID("usr")}} {
				called := false
				_, err := s.UpdateUser(ctx, c.org, c.id, func(*access.User) error { called = true; return nil })
				is.True(errors.Is(err, ports.ErrNotFound))
				is.True(!called)
			}
		}},
		{"update to a taken email is a conflict", func(t *testing.T, s ports.UserStore) {
			is := is.New(t)
			u1, u2 := newUser(newID("org"), 0), newUser(newID("org"), 1)
			is.NoErr(s.CreateUser(ctx, u1))
			is.NoErr(s.CreateUser(ctx, u2))
			_, err := s.UpdateUser(ctx, u2.OrgID, u2.ID, func(u *access.User) error {
				u.Email = strings.ToLower(u1.Email)
				return nil
			})
			is.True(errors.Is(err, ports.ErrConflict))
			stored, err := s.GetUser(ctx, u2.ID)
			is.NoErr(err)
			is.Equal(stored.Email, u2.Email)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}
