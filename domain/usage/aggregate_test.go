package usage_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/usage"
)

func TestPeriodStart(t *testing.T) {
	// 2026-11-23 is a Monday.
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		in   string
		g    usage.Group
		want string
	}{
		{"2026-11-23T15:04:05Z", usage.ByDay, "2026-11-23"},
		{"2026-11-23T23:59:59-02:00", usage.ByDay, "2026-11-24"}, // UTC decides
		{"2026-11-23T00:00:00Z", usage.ByWeek, "2026-11-23"},
		{"2026-11-29T23:59:59Z", usage.ByWeek, "2026-11-23"}, // Sunday
		{"2026-11-30T00:00:00Z", usage.ByWeek, "2026-11-30"},
		{"2026-01-01T10:00:00Z", usage.ByWeek, "2025-12-29"}, // across a year
		{"2026-11-30T10:00:00Z", usage.ByMonth, "2026-11-01"},
		{"2026-12-01T00:00:00Z", usage.ByMonth, "2026-12-01"},
	}
	for _, tt := range tests {
		t.Run(tt.in+"/"+string(tt.g), func(t *testing.T) {
			is.New(t).Equal(usage.PeriodStart(at(tt.in), tt.g).Format(time.DateOnly), tt.want)
		})
	}
}

func TestAggregate(t *testing.T) {
	day := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	es := []usage.Entry{
		{OrgID: "o1", Task: "enrichment", Model: "p::a", KeyID: "k1", InputTokens: 10, OutputTokens: 5, Cost: 100, LatencyMS: 20, Outcome: usage.OK, CreatedAt: day},
		{OrgID: "o1", Task: "enrichment", Model: "p::a", KeyID: "k1", InputTokens: 1, OutputTokens: 2, Cost: 50, LatencyMS: 40, Outcome: "rate_limited", CreatedAt: day.Add(time.Hour)},
		{OrgID: "o1", Task: "schema_generation", Model: "p::b", InputTokens: 7, OutputTokens: 3, Cost: 30, LatencyMS: 10, Outcome: usage.OK, CreatedAt: day.AddDate(0, 0, 1)},
		{OrgID: "o2", Task: "enrichment", Model: "p::a", KeyID: "k9", InputTokens: 100, OutputTokens: 100, Cost: 1000, Outcome: usage.OK, CreatedAt: day},
		{OrgID: "o1", Task: "enrichment", Model: "p::a", Cost: 7, Outcome: usage.OK, CreatedAt: day.AddDate(0, 0, -30)}, // out of range
	}
	scope := usage.Scope{OrgID: "o1", From: day.AddDate(0, 0, -7), To: day.AddDate(0, 0, 7)}
	tests := []struct {
		name  string
		scope usage.Scope
		g     usage.Group
		want  []usage.Total
	}{
		{"all of o1", scope, usage.ByNothing, []usage.Total{{Requests: 3, Failed: 1, InputTokens: 18, OutputTokens: 10, Cost: 180, LatencyMS: 70}}},
		{"by model", scope, usage.ByModel, []usage.Total{
			{Key: "p::a", Requests: 2, Failed: 1, InputTokens: 11, OutputTokens: 7, Cost: 150, LatencyMS: 60},
			{Key: "p::b", Requests: 1, InputTokens: 7, OutputTokens: 3, Cost: 30, LatencyMS: 10}}},
		{"by key", scope, usage.ByKey, []usage.Total{
			{Key: "", Requests: 1, InputTokens: 7, OutputTokens: 3, Cost: 30, LatencyMS: 10},
			{Key: "k1", Requests: 2, Failed: 1, InputTokens: 11, OutputTokens: 7, Cost: 150, LatencyMS: 60}}},
		{"by day", scope, usage.ByDay, []usage.Total{
			{Key: "2026-11-23", Requests: 2, Failed: 1, InputTokens: 11, OutputTokens: 7, Cost: 150, LatencyMS: 60},
			{Key: "2026-11-24", Requests: 1, InputTokens: 7, OutputTokens: 3, Cost: 30, LatencyMS: 10}}},
		{"one task", usage.Scope{OrgID: "o1", From: scope.From, To: scope.To, Task: "schema_generation"}, usage.ByNothing,
			[]usage.Total{{Requests: 1, InputTokens: 7, OutputTokens: 3, Cost: 30, LatencyMS: 10}}},
		{"every organization", usage.Scope{From: scope.From, To: scope.To}, usage.ByNothing,
			[]usage.Total{{Requests: 4, Failed: 1, InputTokens: 118, OutputTokens: 110, Cost: 1180, LatencyMS: 70}}},
		{"nothing in scope", usage.Scope{OrgID: "o3", From: scope.From, To: scope.To}, usage.ByModel, []usage.Total{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got := usage.Aggregate(es, tt.scope, tt.g)
			is.Equal(got, tt.want)
			is.Equal(usage.Sum(got), usage.Sum(tt.want))
		})
	}
}

func TestTotalAverages(t *testing.T) {
	is := is.New(t)
	tot := usage.Total{Requests: 4, Cost: 2_000_000, LatencyMS: 100}
	is.Equal(tot.CostUSD(), 2.0)
	is.Equal(tot.AvgCostUSD(), 0.5)
	is.Equal(tot.AvgLatencyMS(), 25.0)
	is.Equal(usage.Total{}.AvgCostUSD(), 0.0) // no division by zero
	is.Equal(usage.Total{}.AvgLatencyMS(), 0.0)
}

func TestPreset(t *testing.T) {
	is := is.New(t)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	from, to, err := usage.Preset("7d", now)
	is.NoErr(err)
	is.Equal(from, now.AddDate(0, 0, -7))
	is.True(to.After(now))
	from, _, err = usage.Preset("all", now)
	is.NoErr(err)
	is.True(from.IsZero())
	for _, p := range usage.Presets() {
		_, _, err := usage.Preset(p, now)
		is.NoErr(err)
	}
	_, _, err = usage.Preset("1y", now)
	is.Equal(err, usage.ErrUnknownPreset)
	g, err := usage.ParsePeriod("week")
	is.NoErr(err)
	is.Equal(g, usage.ByWeek)
	_, err = usage.ParsePeriod("year")
	is.True(err != nil)
}
