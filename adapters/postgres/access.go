package postgres

import (
	"context"
	"database/sql"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.OrgStore    = (*OrgStore)(nil)
	_ ports.UserStore   = (*UserStore)(nil)
	_ ports.APIKeyStore = (*APIKeyStore)(nil)
)

type orgRow struct {
	bun.BaseModel `bun:"table:organizations"`

	ID            string            `bun:"id,pk"`
	Name          string            `bun:"name,notnull"`
	CreatedAt     time.Time         `bun:"created_at,notnull"`
	ModelDefaults map[string]string `bun:"model_defaults,type:jsonb,notnull"`
}

func orgToRow(o *access.Organization) *orgRow {
	d := o.ModelDefaults
	if d == nil {
		d = map[string]string{}
	}
	return &orgRow{ID: o.ID, Name: o.Name, CreatedAt: utc(o.CreatedAt), ModelDefaults: d}
}

func (r *orgRow) org() *access.Organization {
	o := &access.Organization{ID: r.ID, Name: r.Name, CreatedAt: utc(r.CreatedAt)}
	if len(r.ModelDefaults) > 0 {
		o.ModelDefaults = maps.Clone(r.ModelDefaults) // the caller's map is not the row's
	}
	return o
}

// OrgStore keeps organizations in the organizations table.
type OrgStore struct{ db bun.IDB }

// NewOrgStore returns an OrgStore on db (a *bun.DB, or a bun.Tx to work
// inside a transaction).
func NewOrgStore(db bun.IDB) *OrgStore { return &OrgStore{db: db} }

// CreateOrg inserts o; an existing id is ErrConflict.
func (s *OrgStore) CreateOrg(ctx context.Context, o *access.Organization) error {
	if _, err := s.db.NewInsert().Model(orgToRow(o)).Exec(ctx); err != nil {
		return conflict(err, "create organization "+o.ID)
	}
	return nil
}

// GetOrg returns the organization id.
func (s *OrgStore) GetOrg(ctx context.Context, id string) (*access.Organization, error) {
	var r orgRow
	if err := s.db.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, notFound(err, "get organization "+id)
	}
	return r.org(), nil
}

// UpdateOrg locks the organization's row, calls fn and writes what fn
// left.
func (s *OrgStore) UpdateOrg(ctx context.Context, id string, fn func(*access.Organization) error) (*access.Organization, error) {
	var out *access.Organization
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		var r orgRow
		if err := tx.NewSelect().Model(&r).Where("id = ?", id).For("UPDATE").Scan(ctx); err != nil {
			return notFound(err, "update organization "+id)
		}
		o := r.org()
		if err := fn(o); err != nil {
			return err
		}
		o.ID, o.CreatedAt = r.ID, r.CreatedAt
		nr := orgToRow(o)
		if _, err := tx.NewUpdate().Model(nr).WherePK().Exec(ctx); err != nil {
			return fail(err, "update organization "+id)
		}
		out = nr.org()
		return nil
	})
	if err != nil {
		return nil, txErr(err, "update organization "+id)
	}
	return out, nil
}

// LockOrg locks the organization's row (SELECT … FOR UPDATE) until the end
// of the transaction the store runs in. On a *bun.DB the statement is its own
// transaction, so the lock ends at once and only existence is checked.
func (s *OrgStore) LockOrg(ctx context.Context, id string) error {
	var got string
	if err := s.db.NewSelect().Model((*orgRow)(nil)).Column("id").Where("id = ?", id).For("UPDATE").Scan(ctx, &got); err != nil {
		return notFound(err, "lock organization "+id)
	}
	return nil
}

type userRow struct {
	bun.BaseModel `bun:"table:users"`

	ID           string    `bun:"id,pk"`
	OrgID        string    `bun:"org_id,notnull"`
	Email        string    `bun:"email,notnull"`
	PasswordHash string    `bun:"password_hash,notnull"`
	Role         string    `bun:"role,notnull"`
	Status       string    `bun:"status,notnull"`
	SysAdmin     bool      `bun:"sys_admin,notnull"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
}

func userToRow(u *access.User) *userRow {
	return &userRow{ID: u.ID, OrgID: u.OrgID, Email: u.Email, PasswordHash: u.PasswordHash, Role: string(u.Role),
		Status: string(u.Status), SysAdmin: u.SysAdmin, CreatedAt: utc(u.CreatedAt)}
}

func (r *userRow) user() *access.User {
	return &access.User{ID: r.ID, OrgID: r.OrgID, Email: r.Email, PasswordHash: r.PasswordHash,
		Role: access.Role(r.Role), Status: access.UserStatus(r.Status), SysAdmin: r.SysAdmin, CreatedAt: utc(r.CreatedAt)}
}

// UserStore keeps users in the users table; emails are unique whatever their
// case (a unique index on lower(email)).
type UserStore struct{ db bun.IDB }

// NewUserStore returns a UserStore on db.
func NewUserStore(db bun.IDB) *UserStore { return &UserStore{db: db} }

// CreateUser inserts u; an existing id or email is ErrConflict.
func (s *UserStore) CreateUser(ctx context.Context, u *access.User) error {
	if _, err := s.db.NewInsert().Model(userToRow(u)).Exec(ctx); err != nil {
		return conflict(err, "create user "+u.ID)
	}
	return nil
}

// GetUser returns the user id of any organization.
func (s *UserStore) GetUser(ctx context.Context, id string) (*access.User, error) {
	var r userRow
	if err := s.db.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, notFound(err, "get user "+id)
	}
	return r.user(), nil
}

// GetUserByEmail returns the user with this email, compared without case.
func (s *UserStore) GetUserByEmail(ctx context.Context, email string) (*access.User, error) {
	var r userRow
	if err := s.db.NewSelect().Model(&r).Where("lower(email) = lower(?)", email).Scan(ctx); err != nil {
		return nil, notFound(err, "get user by email")
	}
	return r.user(), nil
}

// ListUsers returns an organization's users, oldest first.
func (s *UserStore) ListUsers(ctx context.Context, orgID string) ([]*access.User, error) {
	var rows []userRow
	if err := s.db.NewSelect().Model(&rows).Where("org_id = ?", orgID).Order("created_at ASC", "id ASC").Scan(ctx); err != nil {
		return nil, fail(err, "list users")
	}
	out := make([]*access.User, len(rows))
	for i := range rows {
		out[i] = rows[i].user()
	}
	return out, nil
}

// UpdateUser locks the user, calls fn and writes the result when fn returns
// nil; fn's error is returned as it is. The id and organization cannot change.
func (s *UserStore) UpdateUser(ctx context.Context, orgID, id string, fn func(*access.User) error) (*access.User, error) {
	var out *access.User
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		var r userRow
		if err := tx.NewSelect().Model(&r).Where("id = ? AND org_id = ?", id, orgID).For("UPDATE").Scan(ctx); err != nil {
			return notFound(err, "update user "+id)
		}
		u := r.user()
		if err := fn(u); err != nil {
			return err
		}
		u.ID, u.OrgID = r.ID, r.OrgID
		nr := userToRow(u)
		if _, err := tx.NewUpdate().Model(nr).WherePK().Exec(ctx); err != nil {
			return conflict(err, "update user "+id)
		}
		out = nr.user()
		return nil
	})
	if err != nil {
		return nil, txErr(err, "update user "+id)
	}
	return out, nil
}

type keyRow struct {
	bun.BaseModel `bun:"table:api_keys"`

	ID         string     `bun:"id,pk"`
	OrgID      string     `bun:"org_id,notnull"`
	CreatedBy  string     `bun:"created_by,nullzero"`
	Legacy     bool       `bun:"legacy,notnull"`
	Name       string     `bun:"name,notnull"`
	Role       string     `bun:"role,nullzero"`
	Scopes     []string   `bun:"scopes,array,notnull"`
	Prefix     string     `bun:"prefix,notnull"`
	Hash       string     `bun:"hash,notnull"`
	ExpiresAt  *time.Time `bun:"expires_at"`
	CreatedAt  time.Time  `bun:"created_at,notnull"`
	RevokedAt  *time.Time `bun:"revoked_at"`
	LastUsedAt *time.Time `bun:"last_used_at"`
	UseCount   int64      `bun:"use_count,notnull"`
}

func keyToRow(k *access.APIKey) *keyRow {
	scopes := make([]string, len(k.Scopes))
	for i, s := range k.Scopes {
		scopes[i] = string(s)
	}
	return &keyRow{ID: k.ID, OrgID: k.OrgID, CreatedBy: k.CreatedBy, Legacy: k.Legacy, Name: k.Name, Role: string(k.Role),
		Scopes: scopes, Prefix: k.Prefix, Hash: k.Hash, ExpiresAt: utcPtr(k.ExpiresAt), CreatedAt: utc(k.CreatedAt),
		RevokedAt: utcPtr(k.RevokedAt), LastUsedAt: utcPtr(k.LastUsedAt), UseCount: k.UseCount}
}

func (r *keyRow) key() *access.APIKey {
	var scopes []access.Scope
	for _, s := range r.Scopes {
		scopes = append(scopes, access.Scope(s))
	}
	return &access.APIKey{ID: r.ID, OrgID: r.OrgID, CreatedBy: r.CreatedBy, Legacy: r.Legacy, Name: r.Name,
		Role: access.Role(r.Role), Scopes: scopes, Prefix: r.Prefix, Hash: r.Hash, ExpiresAt: utcPtr(r.ExpiresAt),
		CreatedAt: utc(r.CreatedAt), RevokedAt: utcPtr(r.RevokedAt), LastUsedAt: utcPtr(r.LastUsedAt), UseCount: r.UseCount}
}

func keys(rows []keyRow) []*access.APIKey {
	out := make([]*access.APIKey, len(rows))
	for i := range rows {
		out[i] = rows[i].key()
	}
	return out
}

// APIKeyStore keeps access keys (prefix and hash, never the key) in the
// api_keys table.
type APIKeyStore struct{ db bun.IDB }

// NewAPIKeyStore returns an APIKeyStore on db.
func NewAPIKeyStore(db bun.IDB) *APIKeyStore { return &APIKeyStore{db: db} }

// CreateKey inserts k; an existing id is ErrConflict.
func (s *APIKeyStore) CreateKey(ctx context.Context, k *access.APIKey) error {
	if _, err := s.db.NewInsert().Model(keyToRow(k)).Exec(ctx); err != nil {
		return conflict(err, "create key "+k.ID)
	}
	return nil
}

// FindKeysByPrefix returns every key with this prefix, oldest first.
//
// It authenticates every request made with an access key, so outside a
// transaction it runs a fixed text straight on pgx (findKeysSQL), which
// scans its columns without Bun's query building and reflection.
func (s *APIKeyStore) FindKeysByPrefix(ctx context.Context, prefix string) ([]*access.APIKey, error) {
	var rows []keyRow
	var err error
	if db, ok := pool(s.db); ok {
		rows, err = findKeys(ctx, db, prefix)
	} else {
		err = s.db.NewSelect().Model(&rows).Where("prefix = ?", prefix).Order("created_at ASC", "id ASC").Scan(ctx)
	}
	if err != nil {
		return nil, fail(err, "find keys by prefix")
	}
	return keys(rows), nil
}

const keyColumns = "id, org_id, created_by, legacy, name, role, scopes, prefix, hash, expires_at, created_at, " +
	"revoked_at, last_used_at, use_count"

const findKeysSQL = "SELECT " + keyColumns + " FROM api_keys WHERE prefix = $1 ORDER BY created_at ASC, id ASC"

// findKeys runs findKeysSQL on a connection of db.
func findKeys(ctx context.Context, db *sql.DB, prefix string) ([]keyRow, error) {
	var out []keyRow
	err := onPgx(ctx, db, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, findKeysSQL, prefix)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r keyRow
			var createdBy, role *string
			if err := rows.Scan(&r.ID, &r.OrgID, &createdBy, &r.Legacy, &r.Name, &role, &r.Scopes, &r.Prefix, &r.Hash,
				&r.ExpiresAt, &r.CreatedAt, &r.RevokedAt, &r.LastUsedAt, &r.UseCount); err != nil {
				return err
			}
			if createdBy != nil {
				r.CreatedBy = *createdBy
			}
			if role != nil {
				r.Role = *role
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

// GetKey returns the key id of organization orgID.
func (s *APIKeyStore) GetKey(ctx context.Context, orgID, id string) (*access.APIKey, error) {
	var r keyRow
	if err := s.db.NewSelect().Model(&r).Where("id = ? AND org_id = ?", id, orgID).Scan(ctx); err != nil {
		return nil, notFound(err, "get key "+id)
	}
	return r.key(), nil
}

// ListKeys returns an organization's keys, oldest first.
func (s *APIKeyStore) ListKeys(ctx context.Context, orgID string) ([]*access.APIKey, error) {
	var rows []keyRow
	if err := s.db.NewSelect().Model(&rows).Where("org_id = ?", orgID).Order("created_at ASC", "id ASC").Scan(ctx); err != nil {
		return nil, fail(err, "list keys")
	}
	return keys(rows), nil
}

// UpdateKey locks the key, calls fn and writes the result when fn returns
// nil; fn's error is returned as it is. The id and organization cannot change.
func (s *APIKeyStore) UpdateKey(ctx context.Context, orgID, id string, fn func(*access.APIKey) error) (*access.APIKey, error) {
	var out *access.APIKey
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		var r keyRow
		if err := tx.NewSelect().Model(&r).Where("id = ? AND org_id = ?", id, orgID).For("UPDATE").Scan(ctx); err != nil {
			return notFound(err, "update key "+id)
		}
		k := r.key()
		if err := fn(k); err != nil {
			return err
		}
		k.ID, k.OrgID = r.ID, r.OrgID
		nr := keyToRow(k)
		if _, err := tx.NewUpdate().Model(nr).WherePK().Exec(ctx); err != nil {
			return conflict(err, "update key "+id)
		}
		out = nr.key()
		return nil
	})
	if err != nil {
		return nil, txErr(err, "update key "+id)
	}
	return out, nil
}

// RecordUsage adds the counts and moves last_used_at forward (never back) in
// one UPDATE … FROM (VALUES …). Several entries for one key are merged first;
// unknown keys are ignored.
func (s *APIKeyStore) RecordUsage(ctx context.Context, usage []ports.KeyUsage) error {
	merged := map[string]ports.KeyUsage{}
	for _, u := range usage {
		m, ok := merged[u.KeyID]
		if !ok {
			m = ports.KeyUsage{KeyID: u.KeyID, LastAt: u.LastAt}
		}
		m.Count += u.Count
		if u.LastAt.After(m.LastAt) {
			m.LastAt = u.LastAt
		}
		merged[u.KeyID] = m
	}
	if len(merged) == 0 {
		return nil
	}
	ids := make([]string, 0, len(merged))
	for id := range merged {
		ids = append(ids, id)
	}
	// A stable order keeps two concurrent flushes from locking rows in
	// opposite orders.
	sort.Strings(ids)
	var values strings.Builder
	args := make([]any, 0, 3*len(ids))
	for i, id := range ids {
		if i > 0 {
			values.WriteString(", ")
		}
		values.WriteString("(?::text, ?::bigint, ?::timestamptz)")
		u := merged[id]
		args = append(args, id, u.Count, utc(u.LastAt))
	}
	q := `UPDATE api_keys AS k
SET use_count = k.use_count + v.n, last_used_at = greatest(k.last_used_at, v.at)
FROM (VALUES ` + values.String() + `) AS v(id, n, at)
WHERE k.id = v.id`
	if _, err := s.db.NewRaw(q, args...).Exec(ctx); err != nil {
		return fail(err, "record key usage")
	}
	return nil
}

// utc is how a time is stored: UTC, to the microsecond of timestamptz, so
// that what an update returns equals what a later read returns.
func utc(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := utc(*t)
	return &v
}
