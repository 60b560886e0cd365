package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/cache"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/quota"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/test/fakeports"
)

// TestOperatorQuota: the quota counts an organization's calls through the
// operator's keys today, reuses a read for a second, refuses past the
// quota with its code and the time until midnight, and lets the
// organization's own keys and other organizations through.
func TestOperatorQuota(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clock := fakeports.NewClock() // 2026-11-26 12:00 UTC
	ledger := memory.NewUsageLedger()
	q := app.NewOperatorQuota(app.QuotaConfig{Limits: quota.Limits{CallsPerDay: 3, TokensPerDay: 1000}}, ledger, clock,
		cache.NewMemo[app.SpentKey, quota.Spent](100))
	guard := app.NewSpendGuard(q, nil)
	add := func(org, source string, tokens int, at time.Time) {
		is.NoErr(ledger.AppendUsage(ctx, []usage.Entry{{ID: t.Name() + at.String() + org + source, OrgID: org, KeySource: source,
			InputTokens: tokens, Outcome: usage.OK, CreatedAt: at}}))
	}
	op := app.Spend{OrgID: "o", Operator: true}
	own := app.Spend{OrgID: "o"}
	add("o", "global", 10, clock.Now().Add(-13*time.Hour)) // yesterday
	add("o", "global", 10, clock.Now().Add(-time.Hour))
	add("o", "global", 10, clock.Now().Add(-time.Minute))
	add("o", "organization", 10, clock.Now().Add(-time.Minute))
	is.NoErr(guard.Check(ctx, op)) // 2 of 3 calls today
	add("o", "global", 10, clock.Now())
	is.NoErr(guard.Check(ctx, op)) // the read of this second is reused
	clock.Add(time.Second)
	err := guard.Check(ctx, op)
	is.True(errors.Is(err, app.ErrQuotaExceeded))
	e, _ := app.AsError(err)
	is.Equal(e.Code, quota.CodeCallsPerDay)
	is.Equal(e.RetryAfter, 12*time.Hour-time.Second)
	is.NoErr(guard.Check(ctx, own))                                       // the organization's own keys
	is.NoErr(guard.Check(ctx, app.Spend{OrgID: "other", Operator: true})) // another organization
	// Tokens: a quota of its own.
	add("t", "global", 1000, clock.Now())
	clock.Add(time.Second)
	e, _ = app.AsError(guard.Check(ctx, app.Spend{OrgID: "t", Operator: true}))
	is.Equal(e.Code, quota.CodeTokensPerDay)
	// Embedding tokens through the operator's keys count as well.
	is.NoErr(ledger.AppendUsage(ctx, []usage.Entry{{ID: t.Name() + "embed", OrgID: "emb", KeySource: "global", Task: app.TaskEmbedding,
		EmbeddingTokens: 1000, Outcome: usage.OK, CreatedAt: clock.Now()}}))
	clock.Add(time.Second)
	e, _ = app.AsError(guard.Check(ctx, app.Spend{OrgID: "emb", Operator: true}))
	is.True(e != nil)
	is.Equal(e.Code, quota.CodeTokensPerDay)
	// The next UTC day frees the quota.
	clock.Add(12 * time.Hour)
	is.NoErr(guard.Check(ctx, op))
	// No quota: nothing is read.
	free := app.NewOperatorQuota(app.QuotaConfig{}, nil, clock, nil)
	is.NoErr(free.CheckSpend(ctx, op))
	var none *app.SpendGuard
	is.NoErr(none.Check(ctx, op))
}
