package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/entityenrich/enrich/domain/webhook"
	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.SubscriptionStore = (*Notifications)(nil)
	_ ports.Outbox            = (*Notifications)(nil)
)

// Notifications keeps schema event subscriptions and the outbox of their
// deliveries (tables schema_subscriptions and event_deliveries).
type Notifications struct{ db bun.IDB }

// NewNotifications returns Notifications on db (a transaction inside a unit
// of work).
func NewNotifications(db bun.IDB) *Notifications { return &Notifications{db: db} }

func (n *Notifications) CreateSubscription(ctx context.Context, s *ports.Subscription) error {
	_, err := n.db.NewRaw(`INSERT INTO schema_subscriptions (id, org_id, schema_id, url, source, secret, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, s.ID, s.OrgID, s.SchemaID, s.URL, s.Source, s.Secret, utc(s.CreatedAt)).Exec(ctx)
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23503" {
		return fmt.Errorf("postgres: create subscription of schema %s: %w", s.SchemaID, ports.ErrNotFound)
	}
	if err != nil {
		return conflict(err, "create subscription "+s.ID)
	}
	return nil
}

func (n *Notifications) ListSubscriptions(ctx context.Context, orgID, schemaID string) ([]*ports.Subscription, error) {
	rows, err := n.db.QueryContext(ctx, `SELECT id, org_id, schema_id, url, source, secret, created_at FROM schema_subscriptions
		WHERE org_id = ? AND schema_id = ? ORDER BY created_at, id`, orgID, schemaID)
	if err != nil {
		return nil, fail(err, "list subscriptions of schema "+schemaID)
	}
	defer rows.Close()
	var out []*ports.Subscription
	for rows.Next() {
		s := &ports.Subscription{}
		if err := rows.Scan(&s.ID, &s.OrgID, &s.SchemaID, &s.URL, &s.Source, &s.Secret, &s.CreatedAt); err != nil {
			return nil, fail(err, "list subscriptions of schema "+schemaID)
		}
		s.CreatedAt = s.CreatedAt.UTC()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(err, "list subscriptions of schema "+schemaID)
	}
	return out, nil
}

func (n *Notifications) DeleteSubscriptions(ctx context.Context, orgID, schemaID string, m ports.SubscriptionMatch) (int, error) {
	col, val := "url", m.URL
	if m.ID != "" {
		col, val = "id", m.ID
	}
	res, err := n.db.ExecContext(ctx, "DELETE FROM schema_subscriptions WHERE org_id = ? AND schema_id = ? AND "+col+" = ?",
		orgID, schemaID, val)
	if err != nil {
		return 0, fail(err, "delete subscriptions of schema "+schemaID)
	}
	k, _ := res.RowsAffected()
	return int(k), nil
}

// queueEventsSQL fans each event out to its schema's subscriptions: one
// statement, whatever the number of events and subscriptions, which a job's
// end sends in its batch (no round trip of its own).
const queueEventsSQL = `INSERT INTO event_deliveries (id, subscription_id, event_id, event, data, next_attempt_at, created_at)
SELECT e.id || '/' || s.id, s.id, e.id, e.event, e.data, e.at, e.at
FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::timestamptz[]) AS e(id, org_id, schema_id, event, data, at)
JOIN schema_subscriptions s ON s.schema_id = e.schema_id AND s.org_id = e.org_id
ON CONFLICT (id) DO NOTHING`

// queueEventsArgs are the parallel arrays of queueEventsSQL.
func queueEventsArgs(events []ports.SchemaEvent) []any {
	ids, orgs, schemas := make([]string, len(events)), make([]string, len(events)), make([]string, len(events))
	names, data, at := make([]string, len(events)), make([]string, len(events)), make([]time.Time, len(events))
	for i, e := range events {
		ids[i], orgs[i], schemas[i], names[i], at[i] = e.ID, e.OrgID, e.SchemaID, string(e.Event), utc(e.At)
		data[i] = string(e.Data)
		if data[i] == "" {
			data[i] = "{}"
		}
	}
	return []any{ids, orgs, schemas, names, data, at}
}

// dollars numbers a query's ? placeholders $1, $2, … (pgx's form).
func dollars(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (n *Notifications) QueueEvents(ctx context.Context, events []ports.SchemaEvent) error {
	if len(events) == 0 {
		return nil
	}
	args := queueEventsArgs(events)
	for i, a := range args {
		args[i] = pgdialect.Array(a)
	}
	if _, err := n.db.NewRaw(queueEventsSQL, args...).Exec(ctx); err != nil {
		return fail(err, "queue schema events")
	}
	return nil
}

// claimSQL leases due deliveries: rows another dispatcher is leasing are
// skipped, not waited for.
const claimSQL = `UPDATE event_deliveries d SET next_attempt_at = ?, attempts = d.attempts + 1
FROM schema_subscriptions s
WHERE d.id IN (SELECT id FROM event_deliveries WHERE next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?
	FOR UPDATE SKIP LOCKED)
	AND s.id = d.subscription_id
RETURNING d.id, d.event_id, d.event, d.data, s.url, s.secret, d.attempts`

func (n *Notifications) ClaimDeliveries(ctx context.Context, now, leaseUntil time.Time, limit int) ([]ports.Delivery, error) {
	rows, err := n.db.QueryContext(ctx, claimSQL, utc(leaseUntil), utc(now), limit)
	if err != nil {
		return nil, fail(err, "claim deliveries")
	}
	defer rows.Close()
	var out []ports.Delivery
	for rows.Next() {
		var d ports.Delivery
		var event, data string
		if err := rows.Scan(&d.ID, &d.EventID, &event, &data, &d.URL, &d.Secret, &d.Attempts); err != nil {
			return nil, fail(err, "claim deliveries")
		}
		d.Event, d.Data = webhook.Event(event), []byte(data)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(err, "claim deliveries")
	}
	return out, nil
}

func (n *Notifications) DeliverySent(ctx context.Context, id string, at time.Time) error {
	_, err := n.db.ExecContext(ctx, `UPDATE event_deliveries SET next_attempt_at = NULL, delivered_at = ?, last_error = ''
		WHERE id = ?`, utc(at), id)
	return failOrNil(err, "mark delivery "+id+" sent")
}

func (n *Notifications) DeliveryFailed(ctx context.Context, id string, next time.Time, lastError string) error {
	var at sql.NullTime
	if !next.IsZero() {
		at = sql.NullTime{Time: utc(next), Valid: true}
	}
	_, err := n.db.ExecContext(ctx, `UPDATE event_deliveries SET next_attempt_at = ?, last_error = ? WHERE id = ?`,
		at, lastError, id)
	return failOrNil(err, "mark delivery "+id+" failed")
}

// PruneDeliveries implements ports.Outbox.
func (n *Notifications) PruneDeliveries(ctx context.Context, before time.Time, limit int) (int64, error) {
	res, err := n.db.ExecContext(ctx, `DELETE FROM event_deliveries WHERE id IN (SELECT id FROM event_deliveries
		WHERE next_attempt_at IS NULL AND created_at < ? ORDER BY created_at LIMIT ?)`, utc(before), limit)
	if err != nil {
		return 0, fail(err, "prune deliveries")
	}
	return res.RowsAffected()
}

func failOrNil(err error, what string) error {
	if err != nil {
		return fail(err, what)
	}
	return nil
}
