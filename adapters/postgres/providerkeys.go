package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.ProviderKeyStore = (*ProviderKeyStore)(nil)

type providerKeyRow struct {
	bun.BaseModel `bun:"table:provider_keys"`

	ID         string     `bun:"id,pk"`
	OrgID      string     `bun:"org_id,nullzero"`
	Provider   string     `bun:"provider,notnull"`
	Name       string     `bun:"name,notnull"`
	Suffix     string     `bun:"suffix,notnull"`
	Sealed     []byte     `bun:"sealed,notnull"`
	Version    int        `bun:"version,notnull"`
	Enabled    bool       `bun:"enabled,notnull"`
	Health     string     `bun:"health,notnull"`
	CheckedAt  *time.Time `bun:"checked_at"`
	ExpiresAt  *time.Time `bun:"expires_at"`
	RestUntil  *time.Time `bun:"rest_until"`
	LastUsedAt *time.Time `bun:"last_used_at"`
	Uses       int64      `bun:"uses,notnull"`
	CreatedAt  time.Time  `bun:"created_at,notnull"`
}

func providerKeyToRow(k *rotation.Key) *providerKeyRow {
	sealed := k.Sealed
	if sealed == nil {
		sealed = []byte{}
	}
	return &providerKeyRow{ID: k.ID, OrgID: k.OrgID, Provider: k.Provider, Name: k.Name, Suffix: k.Suffix, Sealed: sealed,
		Version: k.Version, Enabled: k.Enabled, Health: string(k.Health), CheckedAt: utcPtr(k.CheckedAt), ExpiresAt: utcPtr(k.ExpiresAt),
		RestUntil: utcPtr(k.RestUntil), LastUsedAt: utcPtr(k.LastUsedAt), Uses: k.Uses, CreatedAt: utc(k.CreatedAt)}
}

func (r *providerKeyRow) key() *rotation.Key {
	return &rotation.Key{ID: r.ID, OrgID: r.OrgID, Provider: r.Provider, Name: r.Name, Suffix: r.Suffix, Sealed: r.Sealed,
		Version: r.Version, Enabled: r.Enabled, Health: rotation.Health(r.Health), CheckedAt: utcPtr(r.CheckedAt),
		ExpiresAt: utcPtr(r.ExpiresAt), RestUntil: utcPtr(r.RestUntil), LastUsedAt: utcPtr(r.LastUsedAt), Uses: r.Uses,
		CreatedAt: utc(r.CreatedAt)}
}

// ProviderKeyStore keeps provider keys in the provider_keys table; global
// keys have a NULL org_id.
type ProviderKeyStore struct {
	db    bun.IDB
	picks *pickCombiner
	// pool is db when it is a pool (not a caller's transaction): picks
	// run on it with scanOnce.
	pool *bun.DB
	// native is the pgx pool under pool, when there is one: the combined
	// pick's statement runs on it directly (pickbatch.go).
	native *pgxpool.Pool
}

// ProviderKeyOption configures a ProviderKeyStore.
type ProviderKeyOption func(*ProviderKeyStore)

// NewProviderKeyStore returns a ProviderKeyStore on db.
func NewProviderKeyStore(db bun.IDB, opts ...ProviderKeyOption) *ProviderKeyStore {
	s := &ProviderKeyStore{db: db, picks: &pickCombiner{}}
	switch d := db.(type) {
	case *DB:
		s.pool, s.native = d.DB, d.Pool
	case *bun.DB:
		s.pool = d
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// whereOwner scopes a query to orgID's keys, or to the global ones.
func whereOwner(q bun.QueryBuilder, orgID string) bun.QueryBuilder {
	if orgID == "" {
		return q.Where("org_id IS NULL")
	}
	return q.Where("org_id = ?", orgID)
}

// CreateProviderKey inserts k; an existing id is ErrConflict.
func (s *ProviderKeyStore) CreateProviderKey(ctx context.Context, k *rotation.Key) error {
	defer s.picks.forget()
	if _, err := s.db.NewInsert().Model(providerKeyToRow(k)).Exec(ctx); err != nil {
		return conflict(err, "create provider key "+k.ID)
	}
	return nil
}

// GetProviderKey returns the key id of orgID ("" for global).
func (s *ProviderKeyStore) GetProviderKey(ctx context.Context, orgID, id string) (*rotation.Key, error) {
	var r providerKeyRow
	q := s.db.NewSelect().Model(&r).Where("id = ?", id)
	whereOwner(q.QueryBuilder(), orgID)
	if err := q.Scan(ctx); err != nil {
		return nil, notFound(err, "get provider key "+id)
	}
	return r.key(), nil
}

// ListProviderKeys returns orgID's keys by provider, oldest first.
func (s *ProviderKeyStore) ListProviderKeys(ctx context.Context, orgID string) ([]*rotation.Key, error) {
	var rows []providerKeyRow
	q := s.db.NewSelect().Model(&rows).Order("provider", "created_at", "id")
	whereOwner(q.QueryBuilder(), orgID)
	if err := q.Scan(ctx); err != nil {
		return nil, fail(err, "list provider keys")
	}
	out := make([]*rotation.Key, len(rows))
	for i := range rows {
		out[i] = rows[i].key()
	}
	return out, nil
}

// AllProviderKeys returns every key by id.
func (s *ProviderKeyStore) AllProviderKeys(ctx context.Context) ([]*rotation.Key, error) {
	var rows []providerKeyRow
	if err := s.db.NewSelect().Model(&rows).Order("id").Scan(ctx); err != nil {
		return nil, fail(err, "list all provider keys")
	}
	out := make([]*rotation.Key, len(rows))
	for i := range rows {
		out[i] = rows[i].key()
	}
	return out, nil
}

// UpdateProviderKey locks the row, applies fn and writes the result.
func (s *ProviderKeyStore) UpdateProviderKey(ctx context.Context, orgID, id string, fn func(*rotation.Key) error) (*rotation.Key, error) {
	defer s.picks.forget()
	var out *rotation.Key
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		var r providerKeyRow
		q := tx.NewSelect().Model(&r).Where("id = ?", id).For("UPDATE")
		whereOwner(q.QueryBuilder(), orgID)
		if err := q.Scan(ctx); err != nil {
			return notFound(err, "update provider key "+id)
		}
		k := r.key()
		if err := fn(k); err != nil {
			return err
		}
		k.ID, k.OrgID, k.Provider, k.CreatedAt = r.ID, r.OrgID, r.Provider, r.CreatedAt
		row := providerKeyToRow(k)
		if _, err := tx.NewUpdate().Model(row).WherePK().Exec(ctx); err != nil {
			return fail(err, "update provider key "+id)
		}
		out = row.key()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteProviderKey deletes the key if it is orgID's; ErrNotFound when
// orgID has no such key.
func (s *ProviderKeyStore) DeleteProviderKey(ctx context.Context, orgID, id string) error {
	defer s.picks.forget()
	q := s.db.NewDelete().Model((*providerKeyRow)(nil)).Where("id = ?", id)
	whereOwner(q.QueryBuilder(), orgID)
	res, err := q.Exec(ctx)
	if err != nil {
		return fail(err, "delete provider key "+id)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fail(err, "delete provider key "+id)
	} else if n == 0 {
		return fmt.Errorf("provider key %s: %w", id, ports.ErrNotFound)
	}
	return nil
}

// pickRounds is how many times a pick looks for an idle key (reading the
// candidates again each time) before it shares a busy one.
const pickRounds = 2

// PickProviderKey ranks the candidates with rotation.Ranked, then takes, in
// one statement, the least recently used of them by their live last use
// that no concurrent pick holds (FOR UPDATE SKIP LOCKED) and whose state did
// not change since it was read (same version and rest). The ranking's tiers
// stay (the sticky key, then the organization's keys, then the global ones);
// within a tier the statement orders by the rows' current last use, as
// rotation.Ranked orders by the read one, so a pick that read before a
// concurrent pick committed still takes the key used longest ago instead of
// finding every candidate "changed" and reading again. A key used by a pick
// that committed after this statement began is skipped: locking re-checks
// the row's latest version (k) against the version the statement saw
// (seen, a second, unlocked reference to the same row, which keeps it). When every candidate
// is held it reads again; after pickRounds it shares one of the usable
// keys, chosen at random (every key is busy: sharing is unavoidable, and
// queueing every sharer on one row would be slow).
//
// Picks without a sticky key or exclusions that arrive together are
// combined (pickbatch.go).
func (s *ProviderKeyStore) PickProviderKey(ctx context.Context, orgID string, req rotation.Request) (rotation.Pick, error) {
	if s.combinable(req) {
		return s.picks.pick(ctx, orgID, req, s.pickBatch)
	}
	return s.pickOne(ctx, orgID, req)
}

// pickOne is one pick on its own.
func (s *ProviderKeyStore) pickOne(ctx context.Context, orgID string, req rotation.Request) (rotation.Pick, error) {
	for round := 0; ; round++ {
		ranked, err := s.ranked(ctx, orgID, req)
		if err != nil {
			return rotation.Pick{}, err
		}
		var k *rotation.Key
		if round < pickRounds {
			k, err = s.takeIdle(ctx, ranked, req.Sticky, req.Now)
		} else {
			// Every key is in use: spread the sharers over them rather
			// than queue them all on the least recently used one.
			k, err = s.share(ctx, ranked[rand.IntN(len(ranked))], req.Now)
		}
		if err != nil {
			return rotation.Pick{}, err
		}
		if k != nil {
			return rotation.Pick{Key: k, Source: k.Source()}, nil
		}
		if round > pickRounds+3 {
			return rotation.Pick{}, fmt.Errorf("postgres: pick provider key: keys keep changing: %w", ports.ErrConflict)
		}
	}
}

// takeIdle records the use of the first of ranked that is neither held by
// another transaction nor changed since read, in one statement; nil when
// there is none.
func (s *ProviderKeyStore) takeIdle(ctx context.Context, ranked []*rotation.Key, sticky string, now time.Time) (*rotation.Key, error) {
	var values strings.Builder
	args := make([]any, 0, 5*len(ranked)+2)
	for i, k := range ranked {
		if i > 0 {
			values.WriteString(", ")
		}
		tier := 1 // the organization's
		switch {
		case i == 0 && sticky != "" && k.ID == sticky:
			tier = 0
		case k.OrgID == "":
			tier = 2
		}
		values.WriteString("(?, ?::int, ?::int, ?::timestamptz)")
		args = append(args, k.ID, tier, k.Version, utcPtr(k.RestUntil))
	}
	args = append(args, utc(now))
	with, from := lazy(s.db)
	q := s.db.NewRaw(`WITH `+with+`cand (id, tier, version, rest_until) AS (VALUES `+values.String()+`),
		pick AS (
			SELECT k.id FROM provider_keys k JOIN cand c ON c.id = k.id JOIN provider_keys seen ON seen.id = k.id
			WHERE k.version = c.version AND k.rest_until IS NOT DISTINCT FROM c.rest_until
				AND k.last_used_at IS NOT DISTINCT FROM seen.last_used_at
			ORDER BY c.tier, `+keyOrder+` LIMIT 1
			FOR UPDATE OF k SKIP LOCKED)
		UPDATE provider_keys p SET last_used_at = ?, uses = p.uses + 1 FROM pick`+from+` WHERE p.id = pick.id
		RETURNING p.*`, args...)
	var rows []providerKeyRow
	if err := scanOnce(ctx, s.pool, q, &rows); err != nil {
		return nil, fail(err, "pick provider key")
	}
	if len(rows) == 0 {
		return nil, nil
	}
	r := rows[0]
	return r.key(), nil
}

// share records the use of k whoever else is using it, in one statement,
// if it has not changed since read (then it is still usable); nil when it
// has.
func (s *ProviderKeyStore) share(ctx context.Context, k *rotation.Key, now time.Time) (*rotation.Key, error) {
	with, from := lazy(s.db)
	if with != "" {
		with = "WITH " + strings.TrimSuffix(with, ", ") + " "
		from = " FROM lazy"
	}
	q := s.db.NewRaw(with+`UPDATE provider_keys SET last_used_at = ?, uses = uses + 1`+from+`
		WHERE id = ? AND version = ? AND rest_until IS NOT DISTINCT FROM ?::timestamptz RETURNING provider_keys.*`,
		utc(now), k.ID, k.Version, utcPtr(k.RestUntil))
	var rows []providerKeyRow
	if err := scanOnce(ctx, s.pool, q, &rows); err != nil {
		return nil, fail(err, "pick provider key "+k.ID)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	r := rows[0]
	return r.key(), nil
}

// keyOrder orders the candidates k (locked) and seen (the statement's
// view of the same row) within a tier as rotation's lessRecent does: by
// last use, never-used first, then by creation and id, compared bytewise
// as Go compares strings. It orders by the live last use, not by the
// candidates' read one, so a pick that read before a concurrent pick
// committed (or reads cached candidates) still takes the key used longest
// ago. test/contract's RunProviderKeyRotation holds the two orders
// together over random key sets.
const keyOrder = `seen.last_used_at ASC NULLS FIRST, k.created_at, k.id COLLATE "C"`

// lazy returns a CTE (with, to put after WITH) and its reference (from, to
// append to a FROM list) that make the commit of a single statement's own
// transaction not wait for the WAL flush (synchronous_commit off, set for
// that transaction only): a pick's write is only rotation order, which a
// crash may lose without harm, and waiting for the disk was most of a pick's
// time. One statement, one round trip. Inside a caller's transaction both
// are empty: the caller's commit keeps its own rules. TestPickCommitIsLazyAlone
// shows what a lost pick leaves, and that the setting ends with the pick.
func lazy(db bun.IDB) (with, from string) {
	if _, inTx := db.(bun.Tx); inTx {
		return "", ""
	}
	return "lazy AS (SELECT set_config('synchronous_commit', 'off', true)), ", ", lazy"
}
