package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.UsageLedger = (*UsageLedger)(nil)

type usageRow struct {
	bun.BaseModel `bun:"table:llm_usage"`

	ID           string    `bun:"id,pk"`
	OrgID        string    `bun:"org_id,notnull"`
	JobID        string    `bun:"job_id,notnull"`
	Task         string    `bun:"task,notnull"`
	Model        string    `bun:"model,notnull"`
	KeySource    string    `bun:"key_source,notnull"`
	KeyID        string    `bun:"key_id,notnull"`
	InputTokens  int       `bun:"input_tokens,notnull"`
	OutputTokens int       `bun:"output_tokens,notnull"`
	Searches     int       `bun:"web_search_calls,notnull"`
	EmbedTokens  int       `bun:"embedding_tokens,notnull"`
	Cost         int64     `bun:"cost,notnull"`
	EmbedCost    int64     `bun:"embedding_cost,notnull"`
	LatencyMS    int64     `bun:"latency_ms,notnull"`
	Outcome      string    `bun:"outcome,notnull"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
}

// UsageLedger keeps the LLM call ledger in the llm_usage table.
type UsageLedger struct{ db bun.IDB }

// NewUsageLedger returns a UsageLedger on db.
func NewUsageLedger(db bun.IDB) *UsageLedger { return &UsageLedger{db: db} }

// AppendUsage inserts entries in one statement, skipping the ids the
// ledger holds.
func (l *UsageLedger) AppendUsage(ctx context.Context, entries []usage.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if _, err := l.db.NewInsert().Model(usageRows(entries)).On("CONFLICT (id) DO NOTHING").Exec(ctx); err != nil {
		return conflict(err, "append usage")
	}
	return nil
}

// usageRows are entries as rows, for one INSERT (also in EndJob's query).
func usageRows(entries []usage.Entry) *[]usageRow {
	rows := make([]usageRow, len(entries))
	for i, e := range entries {
		rows[i] = usageRow{ID: e.ID, OrgID: e.OrgID, JobID: e.JobID, Task: e.Task, Model: e.Model, KeySource: e.KeySource, KeyID: e.KeyID,
			InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, Searches: e.WebSearchCalls, EmbedTokens: e.EmbeddingTokens, Cost: e.Cost,
			EmbedCost: e.EmbeddingCost, LatencyMS: e.LatencyMS, Outcome: e.Outcome, CreatedAt: utc(e.CreatedAt)}
	}
	return &rows
}

// ListUsage returns orgID's entries in [from, to), oldest first.
func (l *UsageLedger) ListUsage(ctx context.Context, orgID string, from, to time.Time) ([]usage.Entry, error) {
	var rows []usageRow
	if err := l.db.NewSelect().Model(&rows).Where("org_id = ?", orgID).Where("created_at >= ?", utc(from)).
		Where("created_at < ?", utc(to)).Order("created_at", "id").Scan(ctx); err != nil {
		return nil, fail(err, "list usage")
	}
	out := make([]usage.Entry, len(rows))
	for i, r := range rows {
		out[i] = usage.Entry{ID: r.ID, OrgID: r.OrgID, JobID: r.JobID, Task: r.Task, Model: r.Model, KeySource: r.KeySource, KeyID: r.KeyID,
			InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, WebSearchCalls: r.Searches, EmbeddingTokens: r.EmbedTokens, Cost: r.Cost,
			EmbeddingCost: r.EmbedCost, LatencyMS: r.LatencyMS, Outcome: r.Outcome, CreatedAt: utc(r.CreatedAt)}
	}
	return out, nil
}

// groupExpr is the SQL of a group's key; periods are truncated in UTC and
// formatted as usage.GroupKey does.
func groupExpr(g usage.Group) (string, error) {
	switch g {
	case usage.ByNothing:
		return "''", nil
	case usage.ByModel:
		return "model", nil
	case usage.ByKey:
		return "key_id", nil
	case usage.ByDay, usage.ByWeek, usage.ByMonth:
		return "to_char(date_trunc('" + string(g) + "', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')", nil
	}
	return "", fmt.Errorf("postgres: aggregate usage: unknown group %q", g)
}

// AggregateUsage totals the entries in sc by g in one GROUP BY query.
func (l *UsageLedger) AggregateUsage(ctx context.Context, sc usage.Scope, g usage.Group) ([]usage.Total, error) {
	key, err := groupExpr(g)
	if err != nil {
		return nil, err
	}
	q := l.db.NewSelect().TableExpr("llm_usage").
		ColumnExpr(key+" AS key").
		ColumnExpr("count(*) AS requests").
		ColumnExpr("count(*) FILTER (WHERE outcome <> ?) AS failed", usage.OK).
		ColumnExpr("coalesce(sum(input_tokens), 0) AS input_tokens").
		ColumnExpr("coalesce(sum(output_tokens), 0) AS output_tokens").
		ColumnExpr("coalesce(sum(embedding_tokens), 0) AS embedding_tokens").
		ColumnExpr("coalesce(sum(cost), 0) AS cost").
		ColumnExpr("coalesce(sum(embedding_cost), 0) AS embedding_cost").
		ColumnExpr("coalesce(sum(latency_ms), 0) AS latency_ms").
		Where("created_at >= ?", utc(sc.From)).Where("created_at < ?", utc(sc.To))
	if g != usage.ByNothing {
		q = q.GroupExpr(key).OrderExpr("(" + key + ") COLLATE \"C\"")
	}
	if sc.OrgID != "" {
		q = q.Where("org_id = ?", sc.OrgID)
	}
	if sc.Task != "" {
		q = q.Where("task = ?", sc.Task)
	}
	if sc.KeySource != "" {
		q = q.Where("key_source = ?", sc.KeySource)
	}
	var rows []struct {
		Key          string `bun:"key"`
		Requests     int64  `bun:"requests"`
		Failed       int64  `bun:"failed"`
		InputTokens  int64  `bun:"input_tokens"`
		OutputTokens int64  `bun:"output_tokens"`
		EmbedTokens  int64  `bun:"embedding_tokens"`
		Cost         int64  `bun:"cost"`
		EmbedCost    int64  `bun:"embedding_cost"`
		LatencyMS    int64  `bun:"latency_ms"`
	}
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, fail(err, "aggregate usage")
	}
	out := make([]usage.Total, 0, len(rows))
	for _, r := range rows {
		if r.Requests == 0 {
			continue // the one row of an ungrouped total over nothing
		}
		out = append(out, usage.Total{Key: r.Key, Requests: r.Requests, Failed: r.Failed, InputTokens: r.InputTokens,
			OutputTokens: r.OutputTokens, EmbeddingTokens: r.EmbedTokens, Cost: r.Cost, EmbeddingCost: r.EmbedCost, LatencyMS: r.LatencyMS})
	}
	return out, nil
}

// CountUsage counts the calls and tokens (embedding tokens included) in sc
// in one query. A quota's
// scope (an organization, a key source, a day) is answered from the index
// llm_usage_quota_idx alone (an index-only scan: the tokens are included).
func (l *UsageLedger) CountUsage(ctx context.Context, sc usage.Scope) (usage.Count, error) {
	q := l.db.NewSelect().TableExpr("llm_usage").
		ColumnExpr("count(*) AS calls").
		ColumnExpr("coalesce(sum(input_tokens::bigint + output_tokens::bigint + embedding_tokens::bigint), 0) AS tokens").
		Where("created_at >= ?", utc(sc.From)).Where("created_at < ?", utc(sc.To))
	if sc.OrgID != "" {
		q = q.Where("org_id = ?", sc.OrgID)
	}
	if sc.Task != "" {
		q = q.Where("task = ?", sc.Task)
	}
	if sc.KeySource != "" {
		q = q.Where("key_source = ?", sc.KeySource)
	}
	var c usage.Count
	if err := q.Scan(ctx, &c.Calls, &c.Tokens); err != nil {
		return usage.Count{}, fail(err, "count usage")
	}
	return c, nil
}
