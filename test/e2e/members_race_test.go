package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/pgtest"
)

// TestOwnersDemotingEachOther races two owners demoting each other, 20
// times, through the embedded library on memory and on native PostgreSQL
// (PGlite runs one transaction at a time, so it cannot race). Exactly one
// wins; the other gets member_change_refused (409), and the organization
// always keeps an active owner.
func TestOwnersDemotingEachOther(t *testing.T) {
	for _, b := range []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"memory", func(*testing.T) string { return "" }},
		{"postgres", func(t *testing.T) string { return pgtest.Native(t) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			e, err := enrich.NewEmbedded(ctx, testConfig(b.dsn(t)))
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			for round := range 20 {
				raceOwners(t, ctx, e, round)
			}
		})
	}
}

func raceOwners(t *testing.T, ctx context.Context, e *enrich.Embedded, round int) {
	t.Helper()
	const pw = "correct horse battery"
	a, err := e.Access.Register(ctx, fmt.Sprintf("a%d@race.example", round), pw, "Race")
	if err != nil {
		t.Fatal(err)
	}
	pa, err := e.Access.AuthenticateToken(ctx, a.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	bu, err := e.Access.AddMember(ctx, pa, app.NewMemberInput{Email: fmt.Sprintf("b%d@race.example", round), Password: pw, Role: access.Owner})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Access.Login(ctx, bu.Email, pw, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	pb, err := e.Access.AuthenticateToken(ctx, b.AccessToken)
	if err != nil {
		t.Fatal(err)
	}

	editor := access.Editor
	demote := access.MemberChange{Role: &editor}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, c := range []struct {
		by     *access.Principal
		target string
	}{{pa, pb.UserID}, {pb, pa.UserID}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = e.Access.UpdateMember(ctx, c.by, c.target, demote)
		}()
	}
	close(start)
	wg.Wait()

	won := 0
	for i, err := range errs {
		switch ae, _ := app.AsError(err); {
		case err == nil:
			won++
		case errors.Is(err, ports.ErrConflict) && ae != nil && ae.Code == "member_change_refused":
		default:
			t.Errorf("round %d, owner %d: %v, want nil or member_change_refused", round, i, err)
		}
	}
	if won != 1 {
		t.Errorf("round %d: %d demotions succeeded, want exactly 1", round, won)
	}
	winner := pa
	if errs[0] != nil {
		winner = pb
	}
	members, err := e.Access.ListMembers(ctx, winner)
	if err != nil {
		t.Fatalf("round %d: list members as the remaining owner: %v", round, err)
	}
	owners := 0
	for _, m := range members {
		if m.Role == access.Owner && m.Active() {
			owners++
		}
	}
	if owners != 1 {
		t.Errorf("round %d: %d active owners, want 1", round, owners)
	}
}
