package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/ports"
)

var _ ports.LinkWebhookStore = (*LinkWebhooks)(nil)

// LinkWebhooks keeps the links' delta webhooks (database_links.webhook_url
// and webhook_secret) and their notification state (link_notifications).
type LinkWebhooks struct{ db bun.IDB }

// NewLinkWebhooks returns LinkWebhooks on db.
func NewLinkWebhooks(db bun.IDB) *LinkWebhooks { return &LinkWebhooks{db: db} }

func (w *LinkWebhooks) SetLinkWebhook(ctx context.Context, orgID, databaseID, schemaID, url, secret string) (string, error) {
	var stored string
	err := w.db.QueryRowContext(ctx, `UPDATE database_links SET webhook_url = ?,
		webhook_secret = CASE WHEN webhook_secret = '' THEN ? ELSE webhook_secret END
		WHERE database_id = ? AND schema_id = ? AND org_id = ? RETURNING webhook_secret`,
		url, secret, databaseID, schemaID, orgID).Scan(&stored)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("postgres: set the webhook of link %s/%s: %w", databaseID, schemaID, ports.ErrNotFound)
	}
	if err != nil {
		return "", fail(err, "set the webhook of link "+databaseID+"/"+schemaID)
	}
	return stored, nil
}

func (w *LinkWebhooks) LinkWebhook(ctx context.Context, orgID, databaseID, schemaID string) (string, string, error) {
	var url, secret string
	// Without a schema: the first link with a secret, else the first link.
	err := w.db.QueryRowContext(ctx, `SELECT webhook_url, webhook_secret FROM database_links
		WHERE database_id = ? AND (schema_id = ? OR ? = '') AND org_id = ?
		ORDER BY webhook_secret = '', linked_at, schema_id LIMIT 1`, databaseID, schemaID, schemaID, orgID).Scan(&url, &secret)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", fmt.Errorf("postgres: webhook of link %s/%s: %w", databaseID, schemaID, ports.ErrNotFound)
	}
	if err != nil {
		return "", "", fail(err, "webhook of link "+databaseID+"/"+schemaID)
	}
	return url, secret, nil
}

// pendingSQL finds the links with deltas of their schema above what was
// notified and what was acknowledged: the deltas' primary key keeps the
// scan to the ids above that mark.
const pendingSQL = `SELECT l.database_id, l.schema_id, db.notify_debounce_s, db.max_threshold_timeout_s,
	coalesce(n.attempts, 0), n.next_attempt_at, x.first, x.last, x.max_id
FROM database_links l
JOIN databases db ON db.id = l.database_id
JOIN delta_feeds f ON f.database_id = l.database_id
LEFT JOIN link_notifications n ON n.database_id = l.database_id AND n.schema_id = l.schema_id
CROSS JOIN LATERAL (
	SELECT min(d.created_at) AS first, max(d.created_at) AS last, max(d.id) AS max_id FROM deltas d
	WHERE d.database_id = l.database_id AND d.schema_id = l.schema_id
		AND d.id > greatest(coalesce(n.notified_up_to, 0), f.watermark)
) x
WHERE l.webhook_url <> '' AND l.enrichment_enabled AND (n.lease_until IS NULL OR n.lease_until <= ?)
	AND x.max_id IS NOT NULL
ORDER BY x.first LIMIT ?`

func (w *LinkWebhooks) PendingLinkNotices(ctx context.Context, now time.Time, n int) ([]ports.LinkNotice, error) {
	rows, err := w.db.QueryContext(ctx, pendingSQL, utc(now), n)
	if err != nil {
		return nil, fail(err, "pending link notifications")
	}
	defer rows.Close()
	var out []ports.LinkNotice
	for rows.Next() {
		var ln ports.LinkNotice
		var next sql.NullTime
		if err := rows.Scan(&ln.DatabaseID, &ln.SchemaID, &ln.DebounceS, &ln.CapS, &ln.Attempts, &next, &ln.First,
			&ln.Last, &ln.MaxDeltaID); err != nil {
			return nil, fail(err, "pending link notifications")
		}
		if next.Valid {
			ln.NextAttempt = next.Time.UTC()
		}
		ln.First, ln.Last = ln.First.UTC(), ln.Last.UTC()
		out = append(out, ln)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(err, "pending link notifications")
	}
	return out, nil
}

// claimNoticeSQL leases a link's notification in one statement: the
// state row is created on the first claim, and an existing one is leased
// only when no claim of it is live.
const claimNoticeSQL = `WITH c AS (
	INSERT INTO link_notifications AS n (database_id, schema_id, lease_until) VALUES (?, ?, ?)
	ON CONFLICT (database_id, schema_id) DO UPDATE SET lease_until = EXCLUDED.lease_until
	WHERE n.lease_until IS NULL OR n.lease_until <= ?
	RETURNING n.database_id, n.schema_id, n.attempts, n.next_attempt_at
)
SELECT c.attempts, c.next_attempt_at, l.webhook_url, l.webhook_secret FROM c
JOIN database_links l ON l.database_id = c.database_id AND l.schema_id = c.schema_id`

func (w *LinkWebhooks) ClaimLinkNotice(ctx context.Context, databaseID, schemaID string, now, leaseUntil time.Time) (ports.LinkNotice, bool, error) {
	ln := ports.LinkNotice{DatabaseID: databaseID, SchemaID: schemaID}
	var next sql.NullTime
	err := w.db.QueryRowContext(ctx, claimNoticeSQL, databaseID, schemaID, utc(leaseUntil), utc(now)).
		Scan(&ln.Attempts, &next, &ln.URL, &ln.Secret)
	var pg *pgconn.PgError
	switch {
	case errors.Is(err, sql.ErrNoRows), errors.As(err, &pg) && pg.Code == "23503":
		return ports.LinkNotice{}, false, nil // held by another, or the link is gone
	case err != nil:
		return ports.LinkNotice{}, false, fail(err, "claim the notification of link "+databaseID+"/"+schemaID)
	}
	if next.Valid {
		ln.NextAttempt = next.Time.UTC()
	}
	return ln, ln.URL != "", nil
}

func (w *LinkWebhooks) LinkNoticeSent(ctx context.Context, databaseID, schemaID string, upTo int64) error {
	_, err := w.db.ExecContext(ctx, `UPDATE link_notifications SET notified_up_to = greatest(notified_up_to, ?),
		attempts = 0, next_attempt_at = NULL, lease_until = NULL WHERE database_id = ? AND schema_id = ?`,
		upTo, databaseID, schemaID)
	return failOrNil(err, "mark the notification of link "+databaseID+"/"+schemaID+" sent")
}

func (w *LinkWebhooks) LinkNoticeFailed(ctx context.Context, databaseID, schemaID string, attempts int, next time.Time) error {
	_, err := w.db.ExecContext(ctx, `UPDATE link_notifications SET attempts = ?, next_attempt_at = ?, lease_until = NULL
		WHERE database_id = ? AND schema_id = ?`, attempts, utc(next), databaseID, schemaID)
	return failOrNil(err, "mark the notification of link "+databaseID+"/"+schemaID+" failed")
}
