package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.LoginThrottleStore = (*LoginThrottleStore)(nil)
	_ ports.DeniedTokenStore   = (*DeniedTokenStore)(nil)
	_ ports.InvitationStore    = (*InvitationStore)(nil)
)

type loginFailureRow struct {
	bun.BaseModel `bun:"table:login_failures"`

	Key   string    `bun:"key,pk"`
	Count int       `bun:"count,notnull"`
	Last  time.Time `bun:"last_at,notnull"`
}

// LoginThrottleStore keeps login failures in the login_failures table, so
// that every replica counts the same failures.
type LoginThrottleStore struct{ db bun.IDB }

// NewLoginThrottleStore returns a LoginThrottleStore on db.
func NewLoginThrottleStore(db bun.IDB) *LoginThrottleStore { return &LoginThrottleStore{db: db} }

// LoginFailures returns key's failures (zero when none).
func (s *LoginThrottleStore) LoginFailures(ctx context.Context, key string) (access.LoginFailures, error) {
	var rows []loginFailureRow
	if err := s.db.NewSelect().Model(&rows).Where("key = ?", key).Scan(ctx); err != nil {
		return access.LoginFailures{}, fail(err, "read login failures")
	}
	if len(rows) == 0 {
		return access.LoginFailures{}, nil
	}
	return access.LoginFailures{Count: rows[0].Count, Last: utc(rows[0].Last)}, nil
}

// addLoginFailure counts one failure in one statement: concurrent failures
// of one key on any replica each count.
const addLoginFailure = `INSERT INTO login_failures AS f (key, count, last_at) VALUES (?, 1, ?)
ON CONFLICT (key) DO UPDATE SET
    count = CASE WHEN f.last_at <= ? THEN 1 ELSE f.count + 1 END,
    last_at = GREATEST(f.last_at, EXCLUDED.last_at)
RETURNING count, last_at`

// AddLoginFailure counts a failure of key at `at`.
func (s *LoginThrottleStore) AddLoginFailure(ctx context.Context, key string, at, forgetBefore time.Time) (access.LoginFailures, error) {
	var r loginFailureRow
	if err := s.db.NewRaw(addLoginFailure, key, utc(at), utc(forgetBefore)).Scan(ctx, &r.Count, &r.Last); err != nil {
		return access.LoginFailures{}, fail(err, "count login failure")
	}
	return access.LoginFailures{Count: r.Count, Last: utc(r.Last)}, nil
}

// takeLoginAttempt counts an attempt in one statement, only if the key's
// row is still the one seen (no row: seen is zero, and the insert wins
// only if no concurrent attempt inserted first).
const takeLoginAttempt = `INSERT INTO login_failures AS f (key, count, last_at) VALUES (?, 1, ?)
ON CONFLICT (key) DO UPDATE SET
    count = CASE WHEN f.last_at <= ? THEN 1 ELSE f.count + 1 END,
    last_at = GREATEST(f.last_at, EXCLUDED.last_at)
WHERE f.count = ? AND f.last_at = ?
RETURNING count`

// TakeLoginAttempt counts an attempt of key if its failures are still seen.
func (s *LoginThrottleStore) TakeLoginAttempt(ctx context.Context, key string, seen access.LoginFailures, at, forgetBefore time.Time) (bool, error) {
	var counts []int
	if err := s.db.NewRaw(takeLoginAttempt, key, utc(at), utc(forgetBefore), seen.Count, utc(seen.Last)).Scan(ctx, &counts); err != nil {
		return false, fail(err, "count login attempt")
	}
	return len(counts) == 1, nil
}

// ClearLoginFailures forgets key.
func (s *LoginThrottleStore) ClearLoginFailures(ctx context.Context, key string) error {
	if _, err := s.db.NewDelete().Model((*loginFailureRow)(nil)).Where("key = ?", key).Exec(ctx); err != nil {
		return fail(err, "clear login failures")
	}
	return nil
}

// PurgeLoginFailures forgets the keys whose last failure is not after before.
func (s *LoginThrottleStore) PurgeLoginFailures(ctx context.Context, before time.Time) error {
	if _, err := s.db.NewDelete().Model((*loginFailureRow)(nil)).Where("last_at <= ?", utc(before)).Exec(ctx); err != nil {
		return fail(err, "purge login failures")
	}
	return nil
}

type deniedTokenRow struct {
	bun.BaseModel `bun:"table:denied_tokens"`

	ID        string    `bun:"id,pk"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}

// DeniedTokenStore keeps denied access-token ids in the denied_tokens table.
type DeniedTokenStore struct{ db bun.IDB }

// NewDeniedTokenStore returns a DeniedTokenStore on db.
func NewDeniedTokenStore(db bun.IDB) *DeniedTokenStore { return &DeniedTokenStore{db: db} }

// DenyTokens adds ts in one statement, keeping the later expiry of an id
// already there.
func (s *DeniedTokenStore) DenyTokens(ctx context.Context, ts []access.DeniedToken) error {
	if len(ts) == 0 {
		return nil
	}
	// One row per id: an upsert may not touch a row twice.
	latest := make(map[string]time.Time, len(ts))
	for _, t := range ts {
		if e, ok := latest[t.ID]; !ok || t.ExpiresAt.After(e) {
			latest[t.ID] = utc(t.ExpiresAt)
		}
	}
	ids, exps := make([]string, 0, len(latest)), make([]time.Time, 0, len(latest))
	for id, e := range latest {
		ids, exps = append(ids, id), append(exps, e)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO denied_tokens AS d (id, expires_at)
SELECT * FROM unnest(?::text[], ?::timestamptz[])
ON CONFLICT (id) DO UPDATE SET expires_at = GREATEST(d.expires_at, EXCLUDED.expires_at)`,
		pgdialect.Array(ids), pgdialect.Array(exps))
	if err != nil {
		return fail(err, "deny access tokens")
	}
	return nil
}

// DeniedTokens lists the entries that expire after `after`.
func (s *DeniedTokenStore) DeniedTokens(ctx context.Context, after time.Time) ([]access.DeniedToken, error) {
	var rows []deniedTokenRow
	if err := s.db.NewSelect().Model(&rows).Where("expires_at > ?", utc(after)).Scan(ctx); err != nil {
		return nil, fail(err, "list denied access tokens")
	}
	out := make([]access.DeniedToken, len(rows))
	for i, r := range rows {
		out[i] = access.DeniedToken{ID: r.ID, ExpiresAt: utc(r.ExpiresAt)}
	}
	return out, nil
}

// PurgeDeniedTokens deletes the entries that expire before `before`.
func (s *DeniedTokenStore) PurgeDeniedTokens(ctx context.Context, before time.Time) error {
	if _, err := s.db.NewDelete().Model((*deniedTokenRow)(nil)).Where("expires_at < ?", utc(before)).Exec(ctx); err != nil {
		return fail(err, "purge denied access tokens")
	}
	return nil
}

type invitationRow struct {
	bun.BaseModel `bun:"table:invitations"`

	ID        string     `bun:"id,pk"`
	OrgID     *string    `bun:"org_id"`
	Email     string     `bun:"email,notnull"`
	Role      string     `bun:"role,notnull"`
	Hash      string     `bun:"hash,notnull"`
	CreatedBy string     `bun:"created_by,notnull"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	ExpiresAt time.Time  `bun:"expires_at,notnull"`
	UsedAt    *time.Time `bun:"used_at"`
	UsedBy    string     `bun:"used_by,notnull"`
	RevokedAt *time.Time `bun:"revoked_at"`
}

func invitationToRow(i *access.Invitation) *invitationRow {
	r := &invitationRow{ID: i.ID, Email: i.Email, Role: string(i.Role), Hash: i.Hash, CreatedBy: i.CreatedBy,
		CreatedAt: utc(i.CreatedAt), ExpiresAt: utc(i.ExpiresAt), UsedAt: utcPtr(i.UsedAt), UsedBy: i.UsedBy, RevokedAt: utcPtr(i.RevokedAt)}
	if i.OrgID != "" {
		org := i.OrgID
		r.OrgID = &org
	}
	return r
}

func (r *invitationRow) invitation() *access.Invitation {
	i := &access.Invitation{ID: r.ID, Email: r.Email, Role: access.Role(r.Role), Hash: r.Hash, CreatedBy: r.CreatedBy,
		CreatedAt: utc(r.CreatedAt), ExpiresAt: utc(r.ExpiresAt), UsedAt: utcPtr(r.UsedAt), UsedBy: r.UsedBy, RevokedAt: utcPtr(r.RevokedAt)}
	if r.OrgID != nil {
		i.OrgID = *r.OrgID
	}
	return i
}

// InvitationStore keeps invitations (their token's hash, never the token)
// in the invitations table.
type InvitationStore struct{ db bun.IDB }

// NewInvitationStore returns an InvitationStore on db.
func NewInvitationStore(db bun.IDB) *InvitationStore { return &InvitationStore{db: db} }

// CreateInvitation inserts inv; an existing id or hash is ErrConflict.
func (s *InvitationStore) CreateInvitation(ctx context.Context, inv *access.Invitation) error {
	if _, err := s.db.NewInsert().Model(invitationToRow(inv)).Exec(ctx); err != nil {
		return conflict(err, "create invitation "+inv.ID)
	}
	return nil
}

// GetInvitationByHash returns the invitation with this token hash.
func (s *InvitationStore) GetInvitationByHash(ctx context.Context, hash string) (*access.Invitation, error) {
	var r invitationRow
	if err := s.db.NewSelect().Model(&r).Where("hash = ?", hash).Scan(ctx); err != nil {
		return nil, notFound(err, "get invitation")
	}
	return r.invitation(), nil
}

// UseInvitation marks the invitation used with one conditional update: the
// row lock makes a racing second use wait, then find used_at set.
func (s *InvitationStore) UseInvitation(ctx context.Context, id, userID string, at time.Time) error {
	res, err := s.db.NewUpdate().Model((*invitationRow)(nil)).
		Set("used_at = ?", utc(at)).Set("used_by = ?", userID).
		Where("id = ?", id).Where("used_at IS NULL").Where("revoked_at IS NULL").Where("expires_at > ?", utc(at)).
		Exec(ctx)
	if err != nil {
		return fail(err, "use invitation "+id)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fail(err, "use invitation "+id)
	} else if n == 1 {
		return nil
	}
	exists, err := s.db.NewSelect().Model((*invitationRow)(nil)).Where("id = ?", id).Exists(ctx)
	if err != nil {
		return fail(err, "use invitation "+id)
	}
	if !exists {
		return notFound(sql.ErrNoRows, "use invitation "+id)
	}
	return fmt.Errorf("postgres: use invitation %s: not usable: %w", id, ports.ErrConflict)
}

// ListInvitations lists the organization's invitations, newest first.
func (s *InvitationStore) ListInvitations(ctx context.Context, orgID string, p page.Request) (page.Result[*access.Invitation], error) {
	filter := func(q *bun.SelectQuery) *bun.SelectQuery {
		if orgID == "" {
			return q.Where("org_id IS NULL")
		}
		return q.Where("org_id = ?", orgID)
	}
	var rows []invitationRow
	q := filter(s.db.NewSelect().Model(&rows))
	size := keyset(q, p)
	if err := q.Scan(ctx); err != nil {
		return page.Result[*access.Invitation]{}, fail(err, "list invitations")
	}
	total, err := filter(s.db.NewSelect().Model((*invitationRow)(nil))).Count(ctx)
	if err != nil {
		return page.Result[*access.Invitation]{}, fail(err, "count invitations")
	}
	res := page.Result[*access.Invitation]{Total: int(total)}
	for i := range rows {
		res.Items = append(res.Items, rows[i].invitation())
	}
	res.Items, res.Next = cut(res.Items, size, func(i *access.Invitation) (time.Time, string) { return i.CreatedAt, i.ID })
	return res, nil
}

// RevokeInvitation revokes the organization's invitation (once) and
// returns it.
func (s *InvitationStore) RevokeInvitation(ctx context.Context, orgID, id string, at time.Time) (*access.Invitation, error) {
	var r invitationRow
	q := s.db.NewUpdate().Model(&r).Set("revoked_at = COALESCE(revoked_at, ?)", utc(at)).Where("id = ?", id)
	if orgID == "" {
		q = q.Where("org_id IS NULL")
	} else {
		q = q.Where("org_id = ?", orgID)
	}
	if err := q.Returning("*").Scan(ctx); err != nil {
		return nil, notFound(err, "revoke invitation "+id)
	}
	return r.invitation(), nil
}
