package contract

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

func newRefreshToken(familyID, userID, orgID string, n int) *access.RefreshToken {
	id := newID("rt")
	return &access.RefreshToken{ID: id, FamilyID: familyID, UserID: userID, OrgID: orgID, Hash: "sha256:" + id,
		CreatedAt: at(n), ExpiresAt: at(n + 3600)}
}

func checkRefreshToken(t *testing.T, got, want *access.RefreshToken) {
	t.Helper()
	is := is.NewRelaxed(t)
	is.Equal(got.ID, want.ID)
	is.Equal(got.FamilyID, want.FamilyID)
	is.Equal(got.UserID, want.UserID)
	is.Equal(got.OrgID, want.OrgID)
	is.Equal(got.Hash, want.Hash)
	sameTime(t, "CreatedAt", got.CreatedAt, want.CreatedAt)
	sameTime(t, "ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	sameTimePtr(t, "UsedAt", got.UsedAt, want.UsedAt)
	sameTimePtr(t, "RevokedAt", got.RevokedAt, want.RevokedAt)
}

// RunRefreshTokenStore runs the RefreshTokenStore contract against the
// stores newStore returns. The race of concurrent uses is
// RunRefreshTokenStoreConcurrency.
func RunRefreshTokenStore(t *testing.T, newStore func(t *testing.T) ports.RefreshTokenStore) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, s ports.RefreshTokenStore)
	}{
		{"create and use round trip", func(t *testing.T, s ports.RefreshTokenStore) {
			is := is.New(t)
			fresh := newRefreshToken(newID("fam"), newID("usr"), newID("org"), 0)
			used := newRefreshToken(newID("fam"), newID("usr"), newID("org"), 1)
			used.UsedAt, used.RevokedAt = atPtr(5), atPtr(6)
			for _, tok := range []*access.RefreshToken{fresh, used} {
				want := *tok
				is.NoErr(s.CreateRefreshToken(ctx, tok))
				tok.FamilyID = "changed after create" // the store keeps its own copy
				got, err := s.UseRefreshToken(ctx, want.Hash, at(100))
				is.NoErr(err)
				checkRefreshToken(t, got, &want)
			}
		}},
		{"first use returns it unused, the second used", func(t *testing.T, s ports.RefreshTokenStore) {
			is := is.New(t)
			tok := newRefreshToken(newID("fam"), newID("usr"), newID("org"), 0)
			is.NoErr(s.CreateRefreshToken(ctx, tok))
			first, err := s.UseRefreshToken(ctx, tok.Hash, at(10))
			is.NoErr(err)
			is.Equal(first.UsedAt, nil) // the first use sees an unused token
			second, err := s.UseRefreshToken(ctx, tok.Hash, at(20))
			is.NoErr(err)
			sameTimePtr(t, "UsedAt", second.UsedAt, atPtr(10))
			third, err := s.UseRefreshToken(ctx, tok.Hash, at(30))
			is.NoErr(err)
			sameTimePtr(t, "UsedAt", third.UsedAt, atPtr(10)) // a second use does not move used_at
			want := *tok
			want.UsedAt = atPtr(10)
			checkRefreshToken(t, third, &want)
		}},
		{"unknown hash is not found", func(t *testing.T, s ports.RefreshTokenStore) {
			is := is.New(t)
			_, err := s.UseRefreshToken(ctx, "sha256:"+newID("nothing"), at(0))
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
		{"duplicate hash or id is a conflict", func(t *testing.T, s ports.RefreshTokenStore) {
			is := is.New(t)
			tok := newRefreshToken(newID("fam"), newID("usr"), newID("org"), 0)
			is.NoErr(s.CreateRefreshToken(ctx, tok))
			sameHash := newRefreshToken(newID("fam"), newID("usr"), newID("org"), 1)
			sameHash.Hash = tok.Hash
			sameID := newRefreshToken(newID("fam"), newID("usr"), newID("org"), 2)
			sameID.ID = tok.ID
			for _, dup := range []*access.RefreshToken{sameHash, sameID} {
				is.True(errors.Is(s.CreateRefreshToken(ctx, dup), ports.ErrConflict))
			}
			_, err := s.UseRefreshToken(ctx, sameID.Hash, at(10))
			is.True(errors.Is(err, ports.ErrNotFound)) // nothing half-written
			got, err := s.UseRefreshToken(ctx, tok.Hash, at(10))
			is.NoErr(err)
			checkRefreshToken(t, got, tok)
		}},
		{"revoke family revokes only that family's unrevoked tokens", func(t *testing.T, s ports.RefreshTokenStore) {
			is := is.New(t)
			fam, usr, org := newID("fam"), newID("usr"), newID("org")
			t1, t2 := newRefreshToken(fam, usr, org, 0), newRefreshToken(fam, usr, org, 1)
			t2.UsedAt = atPtr(2)
			early := newRefreshToken(fam, usr, org, 2)
			early.RevokedAt = atPtr(3)
			other := newRefreshToken(newID("fam"), usr, org, 3)
			for _, tok := range []*access.RefreshToken{t1, t2, early, other} {
				is.NoErr(s.CreateRefreshToken(ctx, tok))
			}
			is.NoErr(s.RevokeFamily(ctx, fam, at(50)))
			is.NoErr(s.RevokeFamily(ctx, newID("fam"), at(60))) // an unknown family is no error
			for _, c := range []struct {
				tok     *access.RefreshToken
				revoked *int
			}{{t1, intPtr(50)}, {t2, intPtr(50)}, {early, intPtr(3)}, {other, nil}} {
				got, err := s.UseRefreshToken(ctx, c.tok.Hash, at(100))
				is.NoErr(err)
				want := *c.tok
				want.RevokedAt = nil
				if c.revoked != nil {
					want.RevokedAt = atPtr(*c.revoked)
				}
				checkRefreshToken(t, got, &want)
			}
		}},
		{"revoke user tokens revokes only that user's", func(t *testing.T, s ports.RefreshTokenStore) {
			is := is.New(t)
			usr, org := newID("usr"), newID("org")
			t1, t2 := newRefreshToken(newID("fam"), usr, org, 0), newRefreshToken(newID("fam"), usr, org, 1)
			early := newRefreshToken(newID("fam"), usr, org, 2)
			early.RevokedAt = atPtr(3)
			other := newRefreshToken(t1.FamilyID, newID("usr"), org, 3)
			for _, tok := range []*access.RefreshToken{t1, t2, early, other} {
				is.NoErr(s.CreateRefreshToken(ctx, tok))
			}
			is.NoErr(s.RevokeUserTokens(ctx, usr, at(50)))
			is.NoErr(s.RevokeUserTokens(ctx, newID("usr"), at(60))) // an unknown user is no error
			for _, c := range []struct {
				tok     *access.RefreshToken
				revoked *int
			}{{t1, intPtr(50)}, {t2, intPtr(50)}, {early, intPtr(3)}, {other, nil}} {
				got, err := s.UseRefreshToken(ctx, c.tok.Hash, at(100))
				is.NoErr(err)
				want := *c.tok
				want.RevokedAt = nil
				if c.revoked != nil {
					want.RevokedAt = atPtr(*c.revoked)
				}
				checkRefreshToken(t, got, &want)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}

func intPtr(n int) *int { return &n }

// RunRefreshTokenStoreConcurrency races 20 goroutines to use the same token:
// exactly one sees it unused, the others see it used at the winner's time.
// The adapter must mark the token atomically (PGlite, which runs one query at
// a time, cannot race).
func RunRefreshTokenStoreConcurrency(t *testing.T, newStore func(t *testing.T) ports.RefreshTokenStore) {
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		is := is.New(t)
		s := newStore(t)
		tok := newRefreshToken(newID("fam"), newID("usr"), newID("org"), 0)
		is.NoErr(s.CreateRefreshToken(ctx, tok))
		const n = 20
		got := make([]*access.RefreshToken, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], errs[i] = s.UseRefreshToken(ctx, tok.Hash, at(10+i))
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		unused := 0
		for i, err := range errs {
			if err != nil {
				t.Errorf("goroutine %d: unexpected error %v", i, err)
				continue
			}
			if got[i].UsedAt == nil {
				unused++
				winner = i
			}
		}
		is.Equal(unused, 1) // exactly one goroutine sees the token unused
		for i, g := range got {
			if i != winner && g != nil {
				sameTimePtr(t, "UsedAt", g.UsedAt, atPtr(10+winner))
			}
		}
		last, err := s.UseRefreshToken(ctx, tok.Hash, at(100))
		is.NoErr(err)
		sameTimePtr(t, "UsedAt", last.UsedAt, atPtr(10+winner))
	}
}
