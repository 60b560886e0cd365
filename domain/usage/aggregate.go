package usage

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Group is how ledger entries are totalled: all together, per model, per
// stored key, or per calendar period (UTC days, ISO weeks starting on
// Monday, months).
type Group string

const (
	ByNothing Group = ""
	ByModel   Group = "model"
	ByKey     Group = "key"
	ByDay     Group = "day"
	ByWeek    Group = "week"
	ByMonth   Group = "month"
)

// Periods lists the calendar groupings, as the cost statistics' group_by
// accepts them.
func Periods() []Group { return []Group{ByDay, ByWeek, ByMonth} }

// ParsePeriod returns the calendar grouping named s.
func ParsePeriod(s string) (Group, error) {
	for _, g := range Periods() {
		if string(g) == s {
			return g, nil
		}
	}
	return "", fmt.Errorf("unknown period %q: use day, week or month", s)
}

// Scope selects ledger entries: one organization's (all organizations'
// when OrgID is empty) created in [From, To), of one task when Task is set,
// paid through keys of one source when KeySource is set.
type Scope struct {
	OrgID     string
	From, To  time.Time
	Task      string
	KeySource string
}

// Matches reports whether e is in the scope.
func (s Scope) Matches(e Entry) bool {
	return (s.OrgID == "" || e.OrgID == s.OrgID) && !e.CreatedAt.Before(s.From) && e.CreatedAt.Before(s.To) &&
		(s.Task == "" || e.Task == s.Task) && (s.KeySource == "" || e.KeySource == s.KeySource)
}

// Count is the number of calls in a scope and their tokens (input, output
// and embedding tokens): what the operator's quotas count.
type Count struct {
	Calls  int64
	Tokens int64
}

// CountOf counts the entries in scope s. Stores that count in their query
// must give the same answer.
func CountOf(entries []Entry, s Scope) Count {
	var c Count
	for _, e := range entries {
		if s.Matches(e) {
			c.Calls++
			c.Tokens += int64(e.InputTokens) + int64(e.OutputTokens) + int64(e.EmbeddingTokens)
		}
	}
	return c
}

// Total sums the entries of one group.
type Total struct {
	// Key names the group: the model's composite key, the stored key's id
	// (empty for calls on environment keys or keyless providers), or the
	// period's first day as 2006-01-02; empty when not grouped.
	Key          string
	Requests     int64
	Failed       int64 // calls whose outcome is not OK
	InputTokens  int64
	OutputTokens int64
	// EmbeddingTokens are the embedding calls' tokens (not in InputTokens).
	EmbeddingTokens int64
	// Cost is in micro-credits, embeddings included.
	Cost int64
	// EmbeddingCost is the part of Cost that paid for embeddings.
	EmbeddingCost int64
	// LatencyMS is the sum of the calls' latencies.
	LatencyMS int64
}

// CostUSD is the total cost in US dollars.
func (t Total) CostUSD() float64 { return float64(t.Cost) / 1e6 }

// EmbeddingCostUSD is the embeddings' part of the cost in US dollars.
func (t Total) EmbeddingCostUSD() float64 { return float64(t.EmbeddingCost) / 1e6 }

// AvgCostUSD is the mean cost of one call in US dollars (0 with no call).
func (t Total) AvgCostUSD() float64 {
	if t.Requests == 0 {
		return 0
	}
	return t.CostUSD() / float64(t.Requests)
}

// AvgLatencyMS is the mean latency of one call (0 with no call).
func (t Total) AvgLatencyMS() float64 {
	if t.Requests == 0 {
		return 0
	}
	return float64(t.LatencyMS) / float64(t.Requests)
}

// GroupKey is the group entry e falls in under g.
func GroupKey(e Entry, g Group) string {
	switch g {
	case ByModel:
		return e.Model
	case ByKey:
		return e.KeyID
	case ByDay, ByWeek, ByMonth:
		return PeriodStart(e.CreatedAt, g).Format(time.DateOnly)
	}
	return ""
}

// PeriodStart is the first instant (UTC) of the calendar period of g that
// holds t; the week starts on Monday, as PostgreSQL's date_trunc('week').
func PeriodStart(t time.Time, g Group) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch g {
	case ByWeek:
		back := (int(day.Weekday()) + 6) % 7 // days since Monday
		return day.AddDate(0, 0, -back)
	case ByMonth:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return day
}

// Aggregate totals the entries in scope by g, sorted by group key. Stores
// that sum in their query must give the same answer.
func Aggregate(entries []Entry, s Scope, g Group) []Total {
	by := map[string]*Total{}
	for _, e := range entries {
		if !s.Matches(e) {
			continue
		}
		k := GroupKey(e, g)
		t, ok := by[k]
		if !ok {
			t = &Total{Key: k}
			by[k] = t
		}
		t.Add(e)
	}
	out := make([]Total, 0, len(by))
	for _, t := range by {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Add counts e in t.
func (t *Total) Add(e Entry) {
	t.Requests++
	if e.Outcome != OK {
		t.Failed++
	}
	t.InputTokens += int64(e.InputTokens)
	t.OutputTokens += int64(e.OutputTokens)
	t.EmbeddingTokens += int64(e.EmbeddingTokens)
	t.Cost += e.Cost
	t.EmbeddingCost += e.EmbeddingCost
	t.LatencyMS += e.LatencyMS
}

// Sum totals ts into one Total with no key.
func Sum(ts []Total) Total {
	var s Total
	for _, t := range ts {
		s.Requests += t.Requests
		s.Failed += t.Failed
		s.InputTokens += t.InputTokens
		s.OutputTokens += t.OutputTokens
		s.EmbeddingTokens += t.EmbeddingTokens
		s.Cost += t.Cost
		s.EmbeddingCost += t.EmbeddingCost
		s.LatencyMS += t.LatencyMS
	}
	return s
}

// ErrUnknownPreset is returned by Preset for a name it does not know.
var ErrUnknownPreset = errors.New("unknown preset: use 7d, 30d, 90d or all")

// Presets lists the preset periods of the cost analytics.
func Presets() []string { return []string{"7d", "30d", "90d", "all"} }

// Preset is the period a preset names, ending at now (exclusive of
// nothing: To is a moment after now, so that a call made this instant
// counts). "all" starts at the zero time.
func Preset(name string, now time.Time) (from, to time.Time, err error) {
	to = now.Add(time.Nanosecond)
	switch name {
	case "7d":
		return now.AddDate(0, 0, -7), to, nil
	case "30d":
		return now.AddDate(0, 0, -30), to, nil
	case "90d":
		return now.AddDate(0, 0, -90), to, nil
	case "all":
		return time.Time{}, to, nil
	}
	return time.Time{}, time.Time{}, ErrUnknownPreset
}
