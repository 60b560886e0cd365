package postgres

import (
	"context"
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
	Model        string    `bun:"model,notnull"`
	KeySource    string    `bun:"key_source,notnull"`
	KeyID        string    `bun:"key_id,notnull"`
	InputTokens  int       `bun:"input_tokens,notnull"`
	OutputTokens int       `bun:"output_tokens,notnull"`
	Cost         int64     `bun:"cost,notnull"`
	LatencyMS    int64     `bun:"latency_ms,notnull"`
	Outcome      string    `bun:"outcome,notnull"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
}

// UsageLedger keeps the LLM call ledger in the llm_usage table.
type UsageLedger struct{ db bun.IDB }

// NewUsageLedger returns a UsageLedger on db.
func NewUsageLedger(db bun.IDB) *UsageLedger { return &UsageLedger{db: db} }

// AppendUsage inserts entries in one statement; an existing id is
// ErrConflict.
func (l *UsageLedger) AppendUsage(ctx context.Context, entries []usage.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if _, err := l.db.NewInsert().Model(usageRows(entries)).Exec(ctx); err != nil {
		return conflict(err, "append usage")
	}
	return nil
}

// usageRows are entries as rows, for one INSERT (also in EndJob's query).
func usageRows(entries []usage.Entry) *[]usageRow {
	rows := make([]usageRow, len(entries))
	for i, e := range entries {
		rows[i] = usageRow{ID: e.ID, OrgID: e.OrgID, JobID: e.JobID, Model: e.Model, KeySource: e.KeySource, KeyID: e.KeyID,
			InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, Cost: e.Cost, LatencyMS: e.LatencyMS, Outcome: e.Outcome,
			CreatedAt: utc(e.CreatedAt)}
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
		out[i] = usage.Entry{ID: r.ID, OrgID: r.OrgID, JobID: r.JobID, Model: r.Model, KeySource: r.KeySource, KeyID: r.KeyID,
			InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Cost: r.Cost, LatencyMS: r.LatencyMS, Outcome: r.Outcome,
			CreatedAt: utc(r.CreatedAt)}
	}
	return out, nil
}
