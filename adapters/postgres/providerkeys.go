package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

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
type ProviderKeyStore struct{ db bun.IDB }

// NewProviderKeyStore returns a ProviderKeyStore on db.
func NewProviderKeyStore(db bun.IDB) *ProviderKeyStore { return &ProviderKeyStore{db: db} }

// whereOwner scopes a query to orgID's keys, or to the global ones.
func whereOwner(q bun.QueryBuilder, orgID string) bun.QueryBuilder {
	if orgID == "" {
		return q.Where("org_id IS NULL")
	}
	return q.Where("org_id = ?", orgID)
}

// CreateProviderKey inserts k; an existing id is ErrConflict.
func (s *ProviderKeyStore) CreateProviderKey(ctx context.Context, k *rotation.Key) error {
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

// DeleteProviderKey deletes the key if it is orgID's.
func (s *ProviderKeyStore) DeleteProviderKey(ctx context.Context, orgID, id string) error {
	q := s.db.NewDelete().Model((*providerKeyRow)(nil)).Where("id = ?", id)
	whereOwner(q.QueryBuilder(), orgID)
	if _, err := q.Exec(ctx); err != nil {
		return fail(err, "delete provider key "+id)
	}
	return nil
}

// pickRounds bounds how often a pick re-reads the candidates when others
// took every one it tried.
const pickRounds = 3

// PickProviderKey ranks the candidates with rotation.Ranked, then takes the
// first one that no concurrent pick holds (FOR UPDATE SKIP LOCKED) and that
// nobody used or changed since it was read; only that row is locked, so a
// concurrent pick moves on to the next idle key instead of waiting. When
// every candidate was taken, it reads again; after pickRounds it waits for
// the first choice (all keys are busy: sharing one is unavoidable).
func (s *ProviderKeyStore) PickProviderKey(ctx context.Context, orgID string, req rotation.Request) (rotation.Pick, error) {
	for round := 0; ; round++ {
		var rows []providerKeyRow
		q := s.db.NewSelect().Model(&rows).Where("provider = ?", req.Provider)
		if orgID == "" {
			q.Where("org_id IS NULL")
		} else {
			q.Where("(org_id = ? OR org_id IS NULL)", orgID)
		}
		if err := q.Scan(ctx); err != nil {
			return rotation.Pick{}, fail(err, "pick provider key")
		}
		var org, global []*rotation.Key
		for i := range rows {
			if rows[i].OrgID == "" {
				global = append(global, rows[i].key())
			} else {
				org = append(org, rows[i].key())
			}
		}
		ranked, err := rotation.Ranked(org, global, req)
		if err != nil {
			return rotation.Pick{}, err
		}
		wait := round >= pickRounds
		for _, k := range ranked {
			p, ok, err := s.take(ctx, k, req.Now, wait)
			if err != nil || ok {
				return p, err
			}
			if wait {
				break
			}
		}
		if wait {
			// The first choice changed while we waited: read again.
			if round > pickRounds+3 {
				return rotation.Pick{}, fmt.Errorf("postgres: pick provider key: keys keep changing: %w", ports.ErrConflict)
			}
		}
	}
}

// take locks k's row if it is unchanged since read (same version, health,
// switch and last use) and records its use. With wait false a row that
// another transaction holds is skipped; ok is false when the row was not
// taken.
func (s *ProviderKeyStore) take(ctx context.Context, k *rotation.Key, now time.Time, wait bool) (rotation.Pick, bool, error) {
	var p rotation.Pick
	taken := false
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		var r providerKeyRow
		q := tx.NewSelect().Model(&r).Where("id = ?", k.ID).Where("version = ?", k.Version).
			Where("enabled = ?", k.Enabled).Where("health = ?", string(k.Health)).
			Where("last_used_at IS NOT DISTINCT FROM ?", utcPtr(k.LastUsedAt)).
			Where("rest_until IS NOT DISTINCT FROM ?", utcPtr(k.RestUntil))
		if wait {
			q.For("UPDATE")
		} else {
			q.For("UPDATE SKIP LOCKED")
		}
		if err := q.Scan(ctx); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			return fail(err, "pick provider key "+k.ID)
		}
		key := r.key()
		if !key.Usable(now) {
			return nil
		}
		p = rotation.Pick{Key: key, Source: key.Source()}
		p.Use(utc(now))
		if _, err := tx.NewUpdate().Model((*providerKeyRow)(nil)).Set("last_used_at = ?", p.Key.LastUsedAt).
			Set("uses = uses + 1").Where("id = ?", k.ID).Exec(ctx); err != nil {
			return fail(err, "pick provider key "+k.ID)
		}
		taken = true
		return nil
	})
	if err != nil {
		return rotation.Pick{}, false, err
	}
	return p, taken, nil
}
