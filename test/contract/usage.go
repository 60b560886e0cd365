package contract

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

func newUsage(org string, n int) usage.Entry {
	return usage.Entry{ID: newID("use"), OrgID: org, JobID: newID("job"), Model: "p::m", KeySource: "organization", KeyID: newID("pk"),
		InputTokens: 100 + n, OutputTokens: 20 + n, WebSearchCalls: n % 3, Cost: int64(1000 + n), LatencyMS: int64(50 + n), Outcome: usage.OK, CreatedAt: at(n)}
}

// embeddingCall makes e an embedding call: its tokens are embedding
// tokens and its cost is theirs.
func embeddingCall(e usage.Entry) usage.Entry {
	e.EmbeddingTokens, e.InputTokens, e.OutputTokens, e.EmbeddingCost = e.InputTokens+e.OutputTokens, 0, 0, e.Cost
	return e
}

// RunUsageLedger runs the UsageLedger contract against the ledgers
// newLedger returns.
func RunUsageLedger(t *testing.T, newLedger func(t *testing.T) ports.UsageLedger) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, l ports.UsageLedger)
	}{
		{"append and list round trip, oldest first, in UTC", func(t *testing.T, l ports.UsageLedger) {
			is := is.New(t)
			org := newID("org")
			e2, e1 := embeddingCall(newUsage(org, 2)), newUsage(org, 1)
			e3 := newUsage(org, 3)
			e3.KeySource, e3.KeyID, e3.Outcome = "", "", "rate_limited"
			is.NoErr(l.AppendUsage(ctx, []usage.Entry{e2, e1}))
			is.NoErr(l.AppendUsage(ctx, []usage.Entry{e3, newUsage(newID("org"), 1)}))
			is.NoErr(l.AppendUsage(ctx, nil))
			got, err := l.ListUsage(ctx, org, at(0), at(100))
			is.NoErr(err)
			is.Equal(len(got), 3)
			for i, want := range []usage.Entry{e1, e2, e3} {
				sameTime(t, "CreatedAt", got[i].CreatedAt, want.CreatedAt)
				got[i].CreatedAt = want.CreatedAt
				is.Equal(got[i], want)
			}
		}},
		{"list is the range [from, to)", func(t *testing.T, l ports.UsageLedger) {
			is := is.New(t)
			org := newID("org")
			es := []usage.Entry{newUsage(org, 1), newUsage(org, 2), newUsage(org, 3)}
			is.NoErr(l.AppendUsage(ctx, es))
			got, err := l.ListUsage(ctx, org, at(2), at(3))
			is.NoErr(err)
			is.Equal(len(got), 1)
			is.Equal(got[0].ID, es[1].ID)
		}},
		{"an id held already is skipped: one row per call, however often written", func(t *testing.T, l ports.UsageLedger) {
			is := is.New(t)
			org := newID("org")
			e := newUsage(org, 1)
			is.NoErr(l.AppendUsage(ctx, []usage.Entry{e}))
			fresh := newUsage(org, 2)
			again := e
			again.Cost = 999 // what was written first stands
			is.NoErr(l.AppendUsage(ctx, []usage.Entry{fresh, again, fresh}))
			got, err := l.ListUsage(ctx, org, at(0), at(100))
			is.NoErr(err)
			is.Equal(len(got), 2)
			is.Equal(got[0].ID, e.ID)
			is.Equal(got[0].Cost, e.Cost)
			is.Equal(got[1].ID, fresh.ID)
		}},
		{"aggregates agree with usage.Aggregate for every group", func(t *testing.T, l ports.UsageLedger) {
			is := is.New(t)
			org, other := newID("org"), newID("org")
			task := newID("task")                                   // isolates the all-organizations scope from other tests' entries
			base := time.Date(2026, 11, 28, 23, 30, 0, 0, time.UTC) // a Saturday, late: days and weeks split
			var es []usage.Entry
			for i := range 12 {
				e := newUsage(org, i)
				if i%3 == 0 {
					e.OrgID = other
				}
				e.Task = task
				if i%4 == 0 {
					e.Task = "other-" + task
				}
				e.Model = []string{"p::a", "p::b", "q::é"}[i%3]
				if i%5 == 0 {
					e.KeyID = ""
				}
				if i%5 == 1 {
					e = embeddingCall(e)
				}
				if i%2 == 1 {
					e.Outcome = "rate_limited"
				}
				e.CreatedAt = base.Add(time.Duration(i) * 7 * time.Hour).In(time.FixedZone("x", 5*3600))
				es = append(es, e)
			}
			is.NoErr(l.AppendUsage(ctx, es))
			scopes := []usage.Scope{
				{OrgID: org, From: base.Add(-time.Hour), To: base.AddDate(0, 0, 60)},
				{OrgID: org, From: base.Add(7 * time.Hour), To: base.Add(50 * time.Hour)}, // [from, to)
				{OrgID: org, From: base.Add(-time.Hour), To: base.AddDate(0, 0, 60), Task: task},
				{From: base.Add(-time.Hour), To: base.AddDate(0, 0, 60), Task: task},
				{OrgID: newID("org"), From: base.Add(-time.Hour), To: base.AddDate(0, 0, 60)},
			}
			for i, sc := range scopes {
				for _, g := range []usage.Group{usage.ByNothing, usage.ByModel, usage.ByKey, usage.ByDay, usage.ByWeek, usage.ByMonth} {
					got, err := l.AggregateUsage(ctx, sc, g)
					is.NoErr(err)
					want := usage.Aggregate(es, sc, g)
					if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
						t.Errorf("scope %d by %q:\n got %+v\nwant %+v", i, g, got, want)
					}
				}
			}
		}},
		{"counts of a quota's scope agree with usage.CountOf", func(t *testing.T, l ports.UsageLedger) {
			is := is.New(t)
			org, other := newID("org"), newID("org")
			day := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
			var es []usage.Entry
			for i := range 10 {
				e := newUsage(org, i)
				e.KeySource = []string{"global", "organization", ""}[i%3]
				if i == 6 || i == 7 {
					e = embeddingCall(e) // an embedding's tokens count as a chat call's
				}
				if i == 9 {
					e.OrgID = other
				}
				// 23:00 the day before, then hourly: the first is outside the day.
				e.CreatedAt = day.Add(time.Duration(i-1) * time.Hour).In(time.FixedZone("x", -7*3600))
				es = append(es, e)
			}
			is.NoErr(l.AppendUsage(ctx, es))
			for i, sc := range []usage.Scope{
				{OrgID: org, From: day, To: day.AddDate(0, 0, 1), KeySource: "global"},
				{OrgID: org, From: day, To: day.AddDate(0, 0, 1), KeySource: "organization"},
				{OrgID: org, From: day, To: day.AddDate(0, 0, 1)},
				{OrgID: org, From: day.Add(-2 * time.Hour), To: day.Add(3 * time.Hour), KeySource: "global"}, // [from, to)
				{OrgID: newID("org"), From: day, To: day.AddDate(0, 0, 1), KeySource: "global"},
			} {
				got, err := l.CountUsage(ctx, sc)
				is.NoErr(err)
				want := usage.CountOf(es, sc)
				if got != want {
					t.Errorf("scope %d: got %+v, want %+v", i, got, want)
				}
			}
			// Entry 3 and 6 are the organization's global calls of the day (0 is the day before, 9 another's).
			got, err := l.CountUsage(ctx, usage.Scope{OrgID: org, From: day, To: day.AddDate(0, 0, 1), KeySource: "global"})
			is.NoErr(err)
			is.Equal(got, usage.Count{Calls: 2, Tokens: int64(100+3+20+3) + int64(100+6+20+6)})
			// Aggregates narrow to a key source alike.
			sc := usage.Scope{OrgID: org, From: day.Add(-time.Hour), To: day.AddDate(0, 0, 1), KeySource: "global"}
			totals, err := l.AggregateUsage(ctx, sc, usage.ByNothing)
			is.NoErr(err)
			is.Equal(totals, usage.Aggregate(es, sc, usage.ByNothing))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newLedger(t)) })
	}
}
