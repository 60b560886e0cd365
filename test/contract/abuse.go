package contract

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// RunLoginThrottleStore runs the LoginThrottleStore contract, the
// concurrent count included.
func RunLoginThrottleStore(t *testing.T, newStore func(t *testing.T) ports.LoginThrottleStore) {
	ctx := context.Background()
	t.Run("count, forget and clear", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		k := newID("key")
		f, err := s.LoginFailures(ctx, k)
		is.NoErr(err)
		is.Equal(f.Count, 0) // unknown: none
		for n := 1; n <= 3; n++ {
			f, err = s.AddLoginFailure(ctx, k, at(n), at(-100))
			is.NoErr(err)
			is.Equal(f.Count, n)
			sameTime(t, "Last", f.Last, at(n))
		}
		f, err = s.LoginFailures(ctx, k)
		is.NoErr(err)
		is.Equal(f.Count, 3)
		sameTime(t, "Last", f.Last, at(3))
		// A last failure not after forgetBefore starts over.
		f, err = s.AddLoginFailure(ctx, k, at(200), at(3))
		is.NoErr(err)
		is.Equal(f.Count, 1)
		other := newID("key")
		_, err = s.AddLoginFailure(ctx, other, at(1), at(-100))
		is.NoErr(err)
		is.NoErr(s.ClearLoginFailures(ctx, k))
		is.NoErr(s.ClearLoginFailures(ctx, newID("key"))) // unknown: no error
		f, _ = s.LoginFailures(ctx, k)
		is.Equal(f.Count, 0)
		f, _ = s.LoginFailures(ctx, other)
		is.Equal(f.Count, 1) // keys are apart
		is.NoErr(s.PurgeLoginFailures(ctx, at(1)))
		f, _ = s.LoginFailures(ctx, other)
		is.Equal(f.Count, 0)
	})
	t.Run("concurrent failures all count", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		k := newID("key")
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.AddLoginFailure(ctx, k, at(10), at(-100))
				is.NoErr(err)
			}()
		}
		wg.Wait()
		f, err := s.LoginFailures(ctx, k)
		is.NoErr(err)
		is.Equal(f.Count, 20)
	})
	t.Run("an attempt counts only on the failures seen", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		k := newID("key")
		ok, err := s.TakeLoginAttempt(ctx, k, access.LoginFailures{}, at(1), at(-100))
		is.NoErr(err)
		is.True(ok) // none yet: the first attempt counts
		ok, err = s.TakeLoginAttempt(ctx, k, access.LoginFailures{}, at(1), at(-100))
		is.NoErr(err)
		is.True(!ok) // another attempt counted since "none"
		f, err := s.LoginFailures(ctx, k)
		is.NoErr(err)
		is.Equal(f.Count, 1)
		ok, err = s.TakeLoginAttempt(ctx, k, f, at(2), at(-100))
		is.NoErr(err)
		is.True(ok)
		f, _ = s.LoginFailures(ctx, k)
		is.Equal(f.Count, 2)
		sameTime(t, "Last", f.Last, at(2))
		ok, err = s.TakeLoginAttempt(ctx, k, f, at(200), at(2)) // forgotten: from 1 again
		is.NoErr(err)
		is.True(ok)
		f, _ = s.LoginFailures(ctx, k)
		is.Equal(f.Count, 1)
	})
	t.Run("concurrent attempts share no allowance", func(t *testing.T) {
		// 20 attempts at once from one address, each deciding by the
		// domain's rule on what it read: at most the free ones are let
		// through to a password check.
		is := is.New(t)
		s := newStore(t)
		k := newID("key")
		rule := access.DefaultLoginThrottle()
		now := at(10)
		var admitted atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					f, err := s.LoginFailures(ctx, k)
					if err != nil {
						t.Error(err)
						return
					}
					if rule.Wait(f, now) > 0 {
						return // refused
					}
					ok, err := s.TakeLoginAttempt(ctx, k, f, now, rule.ForgetBefore(now))
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						admitted.Add(1)
						return
					}
				}
			}()
		}
		wg.Wait()
		is.Equal(int(admitted.Load()), rule.Free)
		f, err := s.LoginFailures(ctx, k)
		is.NoErr(err)
		is.Equal(f.Count, rule.Free)
	})
}

// RunDeniedTokenStore runs the DeniedTokenStore contract.
func RunDeniedTokenStore(t *testing.T, newStore func(t *testing.T) ports.DeniedTokenStore) {
	ctx := context.Background()
	is := is.New(t)
	s := newStore(t)
	a, b, c := newID("jti"), newID("jti"), newID("jti")
	is.NoErr(s.DenyTokens(ctx, nil))
	is.NoErr(s.DenyTokens(ctx, []access.DeniedToken{{ID: a, ExpiresAt: at(100)}, {ID: b, ExpiresAt: at(200)}, {ID: a, ExpiresAt: at(50)}}))
	is.NoErr(s.DenyTokens(ctx, []access.DeniedToken{{ID: c, ExpiresAt: at(300)}, {ID: b, ExpiresAt: at(150)}}))
	got := func(after int) map[string]time.Time {
		ds, err := s.DeniedTokens(ctx, at(after))
		is.NoErr(err)
		m := map[string]time.Time{}
		for _, d := range ds {
			if d.ID == a || d.ID == b || d.ID == c {
				m[d.ID] = d.ExpiresAt
			}
		}
		return m
	}
	m := got(0)
	is.Equal(len(m), 3)
	sameTime(t, "a", m[a], at(100)) // the later expiry stays
	sameTime(t, "b", m[b], at(200))
	m = got(100)
	is.Equal(len(m), 2) // a expires at 100: not after it
	is.NoErr(s.PurgeDeniedTokens(ctx, at(250)))
	m = got(0)
	is.Equal(len(m), 1)
	sameTime(t, "c", m[c], at(300))
}

func newInvitation(orgID string, n int) *access.Invitation {
	id := newID("inv")
	return &access.Invitation{ID: id, OrgID: orgID, Email: "", Role: access.Editor, Hash: "sha256:" + id,
		CreatedBy: newID("usr"), CreatedAt: at(n), ExpiresAt: at(n + 3600)}
}

// RunInvitationStore runs the InvitationStore contract. orgOf returns an
// organization that exists in the store's database (invitations name one).
func RunInvitationStore(t *testing.T, newStore func(t *testing.T) ports.InvitationStore, newOrg func(t *testing.T) string) {
	ctx := context.Background()
	t.Run("round trip and single use", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		org := newOrg(t)
		inv := newInvitation(org, 0)
		inv.Email = "x@example.com"
		is.NoErr(s.CreateInvitation(ctx, inv))
		is.True(errors.Is(s.CreateInvitation(ctx, inv), ports.ErrConflict))
		got, err := s.GetInvitationByHash(ctx, inv.Hash)
		is.NoErr(err)
		is.Equal(got.ID, inv.ID)
		is.Equal(got.OrgID, org)
		is.Equal(got.Email, "x@example.com")
		is.Equal(got.Role, access.Editor)
		sameTime(t, "ExpiresAt", got.ExpiresAt, at(3600))
		is.Equal(got.UsedAt, nil)
		_, err = s.GetInvitationByHash(ctx, "sha256:"+newID("none"))
		is.True(errors.Is(err, ports.ErrNotFound))
		is.NoErr(s.UseInvitation(ctx, inv.ID, "usr_1", at(10)))
		is.True(errors.Is(s.UseInvitation(ctx, inv.ID, "usr_2", at(11)), ports.ErrConflict)) // used
		is.True(errors.Is(s.UseInvitation(ctx, newID("inv"), "usr_2", at(11)), ports.ErrNotFound))
		got, _ = s.GetInvitationByHash(ctx, inv.Hash)
		sameTimePtr(t, "UsedAt", got.UsedAt, atPtr(10))
		is.Equal(got.UsedBy, "usr_1")
	})
	t.Run("expired and revoked are not usable", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		org := newOrg(t)
		old, rev := newInvitation(org, 0), newInvitation(org, 1)
		is.NoErr(s.CreateInvitation(ctx, old))
		is.NoErr(s.CreateInvitation(ctx, rev))
		is.True(errors.Is(s.UseInvitation(ctx, old.ID, "u", at(3600)), ports.ErrConflict))
		r, err := s.RevokeInvitation(ctx, org, rev.ID, at(5))
		is.NoErr(err)
		sameTimePtr(t, "RevokedAt", r.RevokedAt, atPtr(5))
		r, err = s.RevokeInvitation(ctx, org, rev.ID, at(9)) // again: unchanged
		is.NoErr(err)
		sameTimePtr(t, "RevokedAt", r.RevokedAt, atPtr(5))
		is.True(errors.Is(s.UseInvitation(ctx, rev.ID, "u", at(6)), ports.ErrConflict))
		_, err = s.RevokeInvitation(ctx, newOrg(t), old.ID, at(5)) // another organization's
		is.True(errors.Is(err, ports.ErrNotFound))
		_, err = s.RevokeInvitation(ctx, "", old.ID, at(5)) // not a new-organization one
		is.True(errors.Is(err, ports.ErrNotFound))
	})
	t.Run("lists by organization, newest first, in pages", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		org := newOrg(t)
		var want []string
		for n := 0; n < 5; n++ {
			inv := newInvitation(org, n)
			is.NoErr(s.CreateInvitation(ctx, inv))
			want = append([]string{inv.ID}, want...)
		}
		is.NoErr(s.CreateInvitation(ctx, newInvitation(newOrg(t), 0)))
		fresh := newInvitation("", 0) // a new organization's
		is.NoErr(s.CreateInvitation(ctx, fresh))
		var got []string
		p := page.Request{Size: 2}
		for {
			res, err := s.ListInvitations(ctx, org, p)
			is.NoErr(err)
			is.Equal(res.Total, 5)
			for _, i := range res.Items {
				got = append(got, i.ID)
			}
			if res.Next == "" {
				break
			}
			p, err = page.ParseRequest(2, res.Next)
			is.NoErr(err)
		}
		is.Equal(got, want)
		res, err := s.ListInvitations(ctx, "", page.Request{Size: 200})
		is.NoErr(err)
		ids := []string{}
		for _, i := range res.Items {
			is.Equal(i.OrgID, "")
			ids = append(ids, i.ID)
		}
		sort.Strings(ids)
		is.True(sort.SearchStrings(ids, fresh.ID) < len(ids) && ids[sort.SearchStrings(ids, fresh.ID)] == fresh.ID)
	})
	t.Run("two uses racing: exactly one wins", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		org := newOrg(t)
		for round := 0; round < 10; round++ {
			inv := newInvitation(org, round)
			is.NoErr(s.CreateInvitation(ctx, inv))
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = s.UseInvitation(ctx, inv.ID, newID("usr"), at(round+1))
				}()
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				if err == nil {
					won++
				} else {
					is.True(errors.Is(err, ports.ErrConflict))
				}
			}
			is.Equal(won, 1)
		}
	})
}

// RunRefreshAccessTokens checks that a refresh token keeps the access token
// issued with it, for a session's revocation.
func RunRefreshAccessTokens(t *testing.T, newStore func(t *testing.T) ports.RefreshTokenStore) {
	ctx := context.Background()
	is := is.New(t)
	s := newStore(t)
	fam, usr := newID("fam"), newID("usr")
	a := newRefreshToken(fam, usr, newID("org"), 0)
	a.AccessTokenID, a.AccessExpiresAt = newID("jti"), at(900)
	b := newRefreshToken(fam, usr, newID("org"), 1)
	b.AccessTokenID, b.AccessExpiresAt = newID("jti"), at(100)
	c := newRefreshToken(newID("fam"), usr, newID("org"), 2)
	c.AccessTokenID, c.AccessExpiresAt = newID("jti"), at(902)
	legacy := newRefreshToken(fam, usr, newID("org"), 3) // no access token kept
	for _, tok := range []*access.RefreshToken{a, b, c, legacy} {
		is.NoErr(s.CreateRefreshToken(ctx, tok))
	}
	ids := func(ds []access.DeniedToken, err error) []string {
		is.NoErr(err)
		out := []string{}
		for _, d := range ds {
			out = append(out, d.ID)
		}
		sort.Strings(out)
		return out
	}
	sorted := func(s ...string) []string { sort.Strings(s); return s }
	is.Equal(ids(s.FamilyAccessTokens(ctx, fam, at(50))), sorted(a.AccessTokenID, b.AccessTokenID))
	is.Equal(ids(s.FamilyAccessTokens(ctx, fam, at(100))), sorted(a.AccessTokenID)) // b has expired
	is.Equal(ids(s.UserAccessTokens(ctx, usr, at(100))), sorted(a.AccessTokenID, c.AccessTokenID))
	got, err := s.UseRefreshToken(ctx, a.Hash, at(5))
	is.NoErr(err)
	is.Equal(got.AccessTokenID, a.AccessTokenID)
	sameTime(t, "AccessExpiresAt", got.AccessExpiresAt, at(900))
}
