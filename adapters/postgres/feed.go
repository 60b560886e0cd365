package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.FeedStore = (*FeedStore)(nil)

// FeedStore is the read side of the feeds: it loads a registration's state
// with the rows a rule needs in one statement, calls domain/delta, and
// saves the new state by compare-and-set on delta_feeds.state_version in
// the statement that changes the rows. A store that lost the race reloads
// and tries again (casAttempts times, then ErrConflict: the feed is busy).
type FeedStore struct{ db bun.IDB }

// NewFeedStore returns a FeedStore on db.
func NewFeedStore(db bun.IDB) *FeedStore { return &FeedStore{db: db} }

// casAttempts bounds the reloads after a lost compare-and-set. Every loss
// means another writer moved the state, so the feed is making progress.
const casAttempts = 20

var errLostRace = errors.New("feed state changed under the writer")

// retry runs fn until it does not lose the compare-and-set race.
func retry(databaseID string, fn func() error) error {
	for range casAttempts {
		if err := fn(); !errors.Is(err, errLostRace) {
			return err
		}
	}
	return fmt.Errorf("postgres: the feed of database %s is busy: %w", databaseID, ports.ErrConflict)
}

// feedRow is a registration's state and settings joined with one delta (id
// 0: none), as the loading statements return them.
type feedRow struct {
	Watermark        int64      `bun:"watermark"`
	Delivered        int64      `bun:"delivered"`
	LeaseUpTo        int64      `bun:"lease_up_to"`
	LeaseExpiresAt   *time.Time `bun:"lease_expires_at"`
	LeaseToken       int64      `bun:"lease_token"`
	Claims           int64      `bun:"claims"`
	Quarantined      []string   `bun:"quarantined,array"`
	StateVersion     int64      `bun:"state_version"`
	WatermarkAt      *time.Time `bun:"watermark_at"`
	PageLimit        int        `bun:"page_limit"`
	PurgeOnAck       bool       `bun:"purge_on_ack"`
	PurgeEntityState bool       `bun:"purge_entity_state"`
	Lo               int64      `bun:"lo"`
	Lim              int        `bun:"lim"`
	SnapshotFrom     int64      `bun:"snapshot_required_from"`
	ContentHashes    string     `bun:"content_hashes"`

	ID           int64      `bun:"id"`
	Kind         string     `bun:"kind"`
	Op           string     `bun:"op"`
	SQL          string     `bun:"sql"`
	Draft        string     `bun:"draft"`
	Payload      string     `bun:"payload"`
	BatchID      string     `bun:"batch_id"`
	Revision     int64      `bun:"revision"`
	EntityType   string     `bun:"entity_type"`
	EntityID     string     `bun:"entity_id"`
	SchemaID     string     `bun:"schema_id"`
	RecordID     string     `bun:"record_id"`
	CreatedAt    *time.Time `bun:"created_at"`
	AckedAt      *time.Time `bun:"acked_at"`
	QuarantineAt *time.Time `bun:"quarantined_at"`
	ApplyError   string     `bun:"apply_error"`
	ApplyErrorAt *time.Time `bun:"apply_error_at"`
}

// loaded is a feed's state with its version and settings, and rows.
type loaded struct {
	state   delta.State
	version int64
	set     delta.Settings
	rows    []ports.StoredDelta
	// snapshot and hashes are the registration's (FeedWindow's
	// SnapshotRequired and ContentHashes).
	snapshot bool
	hashes   map[string]string
}

func (l loaded) deltas() []delta.Delta {
	out := make([]delta.Delta, len(l.rows))
	for i, r := range l.rows {
		out[i] = r.Delta
	}
	return out
}

// stored maps the rules' deltas back to the loaded rows, keeping the
// rules' annotations.
func (l loaded) stored(ds []delta.Delta) []ports.StoredDelta {
	byID := make(map[int64]ports.StoredDelta, len(l.rows))
	for _, r := range l.rows {
		byID[r.ID] = r
	}
	out := make([]ports.StoredDelta, len(ds))
	for i, d := range ds {
		r := byID[d.ID]
		r.Delta = d
		out[i] = r
	}
	return out
}

func toLoaded(rows []feedRow) (loaded, error) {
	f := rows[0]
	l := loaded{version: f.StateVersion,
		set: delta.Settings{PageLimit: f.PageLimit, PurgeOnAck: f.PurgeOnAck, PurgeEntityState: f.PurgeEntityState}.WithDefaults(),
		state: delta.State{Watermark: f.Watermark, Delivered: f.Delivered, Quarantined: f.Quarantined, Claims: uint64(f.Claims),
			Lease: delta.Lease{UpTo: f.LeaseUpTo, Token: uint64(f.LeaseToken)}}}
	if len(l.state.Quarantined) == 0 {
		l.state.Quarantined = nil
	}
	l.snapshot = f.SnapshotFrom > 0
	if err := json.Unmarshal([]byte(f.ContentHashes), &l.hashes); err != nil || l.hashes == nil {
		l.hashes = map[string]string{}
	}
	if f.LeaseExpiresAt != nil {
		l.state.Lease.ExpiresAt = f.LeaseExpiresAt.UTC()
	}
	for _, r := range rows {
		if r.ID == 0 {
			continue
		}
		if r.Draft != "" {
			// Stored by a linked end before its revision was known.
			sql, err := dbsync.DraftSQL([]byte(r.Draft), r.Revision)
			if err != nil {
				return loaded{}, fmt.Errorf("postgres: delta %d: %w", r.ID, err)
			}
			r.SQL = sql
		}
		d := delta.Delta{ID: r.ID, Kind: delta.Kind(r.Kind), Op: delta.Op(r.Op), SQL: r.SQL, Payload: json.RawMessage(r.Payload),
			BatchID: r.BatchID, Revision: r.Revision, EntityType: r.EntityType, AckedAt: utcPtr(r.AckedAt),
			QuarantinedAt: utcPtr(r.QuarantineAt), ApplyError: r.ApplyError}
		if r.CreatedAt != nil {
			d.CreatedAt = r.CreatedAt.UTC()
		}
		l.rows = append(l.rows, ports.StoredDelta{FeedRow: ports.FeedRow{Delta: d, EntityID: r.EntityID, SchemaID: r.SchemaID,
			RecordID: r.RecordID}, ApplyErrorAt: utcPtr(r.ApplyErrorAt)})
	}
	return l, nil
}

// feedCTE is the registration's state and settings, scoped to its
// organization: ?0 the registration, ?1 the organization, ?2 the lowest id
// a rows CTE may return minus one (with the watermark: lo), ?3 the limit
// (0: page_limit).
const feedCTE = `f AS (
	SELECT f.watermark, f.delivered, f.lease_up_to, f.lease_expires_at, f.lease_token, f.claims, f.quarantined,
		f.state_version, f.watermark_at, db.page_limit, db.purge_on_ack, db.purge_entity_state,
		greatest(f.watermark, ?2::bigint) AS lo, coalesce(nullif(?3::int, 0), db.page_limit) AS lim,
		db.snapshot_required_from, (SELECT coalesce(json_object_agg(l.schema_id, l.shipped_hash), '{}')::text
			FROM database_links l WHERE l.database_id = db.id) AS content_hashes
	FROM delta_feeds f JOIN databases db ON db.id = f.database_id
	WHERE f.database_id = ?0 AND db.org_id = ?1
)`

// deltaCols are a delta's columns, empty when the join found none.
const deltaCols = `coalesce(r.id, 0) AS id, coalesce(r.kind, '') AS kind, coalesce(r.op, '') AS op, coalesce(r.sql, '') AS sql,
	coalesce(r.draft::text, '') AS draft,
	coalesce(r.payload::text, '{}') AS payload, coalesce(r.batch_id, '') AS batch_id, coalesce(r.revision, 0) AS revision,
	coalesce(r.entity_type, '') AS entity_type, coalesce(r.entity_id, '') AS entity_id, coalesce(r.schema_id, '') AS schema_id,
	coalesce(r.record_id, '') AS record_id, r.created_at, r.acked_at, r.quarantined_at, coalesce(r.apply_error, '') AS apply_error,
	r.apply_error_at`

// windowCTEs are the rows after lo for a FIFO window: the first lim + 1
// that are not quarantined, the rest of their batches, and one row past
// them all, so that a window never ends inside a batch and has_more is
// right. Each part walks an index: the primary key from lo, the batch
// index for the batches' tails (a lateral probe per batch of the head, so
// the planner never scans the feed for them).
const windowCTEs = `head AS (
	SELECT d.id, d.batch_id FROM deltas d WHERE d.database_id = ?0 AND d.id > (SELECT lo FROM f) AND d.quarantined_at IS NULL
	ORDER BY d.id LIMIT (SELECT lim + 1 FROM f)
), body AS (
	SELECT d.* FROM deltas d WHERE d.database_id = ?0 AND d.id > (SELECT lo FROM f) AND d.quarantined_at IS NULL
		AND d.id <= (SELECT max(id) FROM head)
	UNION ALL
	SELECT d.* FROM (SELECT DISTINCT batch_id FROM head WHERE batch_id <> '') hb CROSS JOIN LATERAL (
		SELECT * FROM deltas x WHERE x.database_id = ?0 AND x.batch_id <> '' AND x.batch_id = hb.batch_id
			AND x.quarantined_at IS NULL AND x.id > (SELECT max(id) FROM head) OFFSET 0) d
), rows AS (
	SELECT * FROM body
	UNION ALL
	(SELECT d.* FROM deltas d WHERE d.database_id = ?0 AND d.quarantined_at IS NULL
		AND d.id > greatest((SELECT lo FROM f), (SELECT coalesce(max(id), 0) FROM body)) ORDER BY d.id LIMIT 1)
)`

// load runs a loading statement: the feed CTE, the rows CTEs (which
// must define rows) and the join, ordered by id (desc: descending). An
// unknown registration, or another organization's, is ErrNotFound.
func (s *FeedStore) load(ctx context.Context, db bun.IDB, what, databaseID, orgID string, since int64, limit int, rowsCTEs string,
	desc bool, args ...any) (loaded, error) {
	order := "ASC"
	if desc {
		order = "DESC"
	}
	q := "WITH " + feedCTE + ", " + rowsCTEs + " SELECT f.*, " + deltaCols + " FROM f LEFT JOIN rows r ON true ORDER BY r.id " + order
	var rows []feedRow
	err := db.NewRaw(q, append([]any{databaseID, orgID, since, limit}, args...)...).Scan(ctx, &rows)
	if err != nil {
		return loaded{}, fail(err, what+" of database "+databaseID)
	}
	if len(rows) == 0 {
		return loaded{}, fmt.Errorf("postgres: %s: database %s: %w", what, databaseID, ports.ErrNotFound)
	}
	return toLoaded(rows)
}

// loadState loads a feed's state without rows.
func (s *FeedStore) loadState(ctx context.Context, db bun.IDB, what, databaseID, orgID string) (loaded, error) {
	return s.load(ctx, db, what, databaseID, orgID, 0, 0, `rows AS (SELECT * FROM deltas WHERE false)`, false)
}

// stateSet is the SET list that saves a state: ?0 the registration, ?1
// the version loaded, then the state's fields (stateArgs).
const stateSet = `UPDATE delta_feeds SET watermark = ?2, delivered = ?3, lease_up_to = ?4, lease_expires_at = ?5,
	lease_token = ?6, claims = ?7, quarantined = ?8::text[], watermark_at = coalesce(?9, watermark_at),
	state_version = state_version + 1
	WHERE database_id = ?0 AND state_version = ?1 RETURNING 1`

// stateArgs are stateSet's arguments; watermarkAt nil keeps the stored one.
func stateArgs(databaseID string, version int64, st delta.State, watermarkAt *time.Time) []any {
	var exp *time.Time
	if st.Lease.Held() {
		e := utc(st.Lease.ExpiresAt)
		exp = &e
	}
	q := st.Quarantined
	if q == nil {
		q = []string{}
	}
	return []any{databaseID, version, st.Watermark, st.Delivered, st.Lease.UpTo, exp, int64(st.Lease.Token), int64(st.Claims),
		pgdialect.Array(q), watermarkAt}
}

// saveState saves st if the stored version is still version
// (errLostRace otherwise).
func saveState(ctx context.Context, db bun.IDB, databaseID string, version int64, st delta.State, watermarkAt *time.Time) error {
	res, err := db.NewRaw(stateSet, stateArgs(databaseID, version, st, watermarkAt)...).Exec(ctx)
	if err != nil {
		return fail(err, "save the feed state of database "+databaseID)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errLostRace
	}
	return nil
}

// Settings reads the registration's feed settings.
func (s *FeedStore) Settings(ctx context.Context, orgID, databaseID string) (delta.Settings, error) {
	var row struct {
		PageLimit        int  `bun:"page_limit"`
		PurgeOnAck       bool `bun:"purge_on_ack"`
		PurgeEntityState bool `bun:"purge_entity_state"`
	}
	err := s.db.NewRaw(`SELECT page_limit, purge_on_ack, purge_entity_state FROM databases WHERE id = ? AND org_id = ?`,
		databaseID, orgID).Scan(ctx, &row)
	if err != nil {
		return delta.Settings{}, notFound(err, "feed settings of database "+databaseID)
	}
	return delta.Settings{PageLimit: row.PageLimit, PurgeOnAck: row.PurgeOnAck, PurgeEntityState: row.PurgeEntityState}.WithDefaults(), nil
}

// Claim leases the next FIFO window: one statement loads the state and
// the window's rows, a second saves the lease (none when the feed is busy
// or empty and nothing changed).
func (s *FeedStore) Claim(ctx context.Context, orgID, databaseID string, now time.Time, lease time.Duration, limit int) (ports.FeedWindow, error) {
	now = utc(now)
	var w ports.FeedWindow
	err := retry(databaseID, func() error {
		l, err := s.load(ctx, s.db, "claim the feed", databaseID, orgID, 0, limit, windowCTEs, false)
		if err != nil {
			return err
		}
		if l.snapshot {
			// Paused: the snapshot sets the consumer's watermark to its
			// head, so nothing is leased until one is served.
			w = ports.FeedWindow{SnapshotRequired: true, ContentHashes: l.hashes, Deltas: []ports.StoredDelta{}}
			return nil
		}
		if limit == 0 {
			limit = l.set.PageLimit
		}
		res, st, err := delta.Claim(l.state, now, lease, l.deltas(), limit)
		if err != nil {
			return fmt.Errorf("postgres: claim the feed of database %s: %w", databaseID, err)
		}
		if !sameState(st, l.state) {
			if err := saveState(ctx, s.db, databaseID, l.version, st, nil); err != nil {
				return err
			}
		}
		w = ports.FeedWindow{Deltas: l.stored(res.Deltas), HasMore: res.HasMore, LeaseExpiresAt: res.LeaseExpiresAt,
			Busy: res.Busy, Redelivery: res.Redelivery, ContentHashes: l.hashes}
		if n := len(res.Deltas); n > 0 {
			w.NextCursor = res.Deltas[n-1].ID
		}
		return nil
	})
	return w, err
}

func sameState(a, b delta.State) bool {
	if a.Watermark != b.Watermark || a.Delivered != b.Delivered || a.Claims != b.Claims || a.Lease.UpTo != b.Lease.UpTo ||
		a.Lease.Token != b.Lease.Token || !a.Lease.ExpiresAt.Equal(b.Lease.ExpiresAt) || len(a.Quarantined) != len(b.Quarantined) {
		return false
	}
	for i := range a.Quarantined {
		if a.Quarantined[i] != b.Quarantined[i] {
			return false
		}
	}
	return true
}

// Read answers claim=false in one statement.
func (s *FeedStore) Read(ctx context.Context, orgID, databaseID string, now time.Time, q delta.ChangesQuery) (ports.FeedWindow, error) {
	now = utc(now)
	var l loaded
	var err error
	if q.Order == delta.Asc && q.Include == delta.Pending {
		l, err = s.load(ctx, s.db, "read the feed", databaseID, orgID, q.Since, q.Limit, windowCTEs, false)
	} else {
		l, err = s.load(ctx, s.db, "read the feed", databaseID, orgID, 0, q.Limit, readCTE(q), q.Order == delta.Desc, q.Since, q.Before)
	}
	if err != nil {
		return ports.FeedWindow{}, err
	}
	if q.Limit == 0 {
		q.Limit = l.set.PageLimit
	}
	p, err := delta.Read(l.state, now, q, l.deltas())
	if err != nil {
		return ports.FeedWindow{}, fmt.Errorf("postgres: read the feed of database %s: %w", databaseID, err)
	}
	w := ports.FeedWindow{Deltas: l.stored(p.Deltas), HasMore: p.HasMore, NextCursor: p.NextCursor,
		SnapshotRequired: l.snapshot, ContentHashes: l.hashes}
	if l.state.Live(now) {
		w.LeaseExpiresAt = l.state.Lease.ExpiresAt
	}
	return w, nil
}

// readCTE selects a browsing read's rows: ?4 since, ?5 before (0: none),
// lim + 1 of them in the query's order.
func readCTE(q delta.ChangesQuery) string {
	include := ""
	switch q.Include {
	case delta.Pending:
		include = " AND d.id > (SELECT watermark FROM f) AND d.quarantined_at IS NULL"
	case delta.Acked:
		include = " AND d.id <= (SELECT watermark FROM f) AND d.quarantined_at IS NULL"
	}
	order := "ASC"
	if q.Order == delta.Desc {
		order = "DESC"
	}
	return `rows AS (SELECT d.* FROM deltas d WHERE d.database_id = ?0 AND d.id > ?4::bigint
		AND (?5::bigint = 0 OR d.id < ?5::bigint)` + include + ` ORDER BY d.id ` + order + ` LIMIT (SELECT lim + 1 FROM f))`
}

// Summary counts the feed's rows in one statement.
func (s *FeedStore) Summary(ctx context.Context, orgID, databaseID string) (ports.FeedSummary, error) {
	var out ports.FeedSummary
	err := s.db.NewRaw(`SELECT f.watermark, f.watermark_at,
		count(d.id) FILTER (WHERE d.id <= f.watermark AND d.quarantined_at IS NULL),
		count(d.id) FILTER (WHERE d.id > f.watermark AND d.quarantined_at IS NULL),
		count(d.id) FILTER (WHERE d.quarantined_at IS NOT NULL),
		count(d.id) FILTER (WHERE d.kind = 'schema'),
		coalesce(min(d.id), 0), coalesce(max(d.id), 0), coalesce(min(d.id) FILTER (WHERE d.kind = 'data'), 0)
		FROM delta_feeds f JOIN databases db ON db.id = f.database_id AND db.org_id = ?1
		LEFT JOIN deltas d ON d.database_id = f.database_id
		WHERE f.database_id = ?0 GROUP BY f.watermark, f.watermark_at`, databaseID, orgID).Scan(ctx,
		&out.Watermark, &out.WatermarkAt, &out.AckedCount, &out.PendingCount, &out.QuarantinedCount, &out.SchemaDeltas,
		&out.MinID, &out.MaxID, &out.FirstDataID)
	if err != nil {
		return ports.FeedSummary{}, notFound(err, "summarize the feed of database "+databaseID)
	}
	out.WatermarkAt = utcPtr(out.WatermarkAt)
	return out, nil
}

// ClearAcked deletes the acknowledged rows still stored, in one statement.
func (s *FeedStore) ClearAcked(ctx context.Context, orgID, databaseID string) (ports.AckOutcome, error) {
	var found, n int64
	err := s.db.NewRaw(`WITH `+feedCTE+`, del AS (
		DELETE FROM deltas d WHERE d.database_id = ?0 AND d.id <= (SELECT watermark FROM f) AND d.quarantined_at IS NULL RETURNING 1
	) SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM del)`, databaseID, orgID, 0, 0).Scan(ctx, &found, &n)
	if err != nil {
		return ports.AckOutcome{}, fail(err, "clear the acknowledged deltas of database "+databaseID)
	}
	if found == 0 {
		return ports.AckOutcome{}, fmt.Errorf("postgres: clear the acknowledged deltas: database %s: %w", databaseID, ports.ErrNotFound)
	}
	return ports.AckOutcome{PurgedDeltas: n}, nil
}
