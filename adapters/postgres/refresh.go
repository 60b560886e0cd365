package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.RefreshTokenStore = (*RefreshTokenStore)(nil)

type refreshRow struct {
	bun.BaseModel `bun:"table:refresh_tokens"`

	ID        string     `bun:"id,pk"`
	FamilyID  string     `bun:"family_id,notnull"`
	UserID    string     `bun:"user_id,notnull"`
	OrgID     string     `bun:"org_id,notnull"`
	Hash      string     `bun:"hash,notnull"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	ExpiresAt time.Time  `bun:"expires_at,notnull"`
	UsedAt    *time.Time `bun:"used_at"`
	RevokedAt *time.Time `bun:"revoked_at"`
	// The access token issued with it (20261128110000).
	AccessTokenID   string     `bun:"access_token_id,notnull"`
	AccessExpiresAt *time.Time `bun:"access_expires_at"`
}

func refreshToRow(t *access.RefreshToken) *refreshRow {
	return &refreshRow{ID: t.ID, FamilyID: t.FamilyID, UserID: t.UserID, OrgID: t.OrgID, Hash: t.Hash,
		CreatedAt: utc(t.CreatedAt), ExpiresAt: utc(t.ExpiresAt), UsedAt: utcPtr(t.UsedAt), RevokedAt: utcPtr(t.RevokedAt),
		AccessTokenID: t.AccessTokenID, AccessExpiresAt: timeOrNil(t.AccessExpiresAt)}
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := utc(t)
	return &u
}

func (r *refreshRow) token() *access.RefreshToken {
	t := &access.RefreshToken{ID: r.ID, FamilyID: r.FamilyID, UserID: r.UserID, OrgID: r.OrgID, Hash: r.Hash,
		CreatedAt: utc(r.CreatedAt), ExpiresAt: utc(r.ExpiresAt), UsedAt: utcPtr(r.UsedAt), RevokedAt: utcPtr(r.RevokedAt),
		AccessTokenID: r.AccessTokenID}
	if r.AccessExpiresAt != nil {
		t.AccessExpiresAt = utc(*r.AccessExpiresAt)
	}
	return t
}

// RefreshTokenStore keeps refresh tokens (their hash, never the token) in the
// refresh_tokens table.
type RefreshTokenStore struct{ db bun.IDB }

// NewRefreshTokenStore returns a RefreshTokenStore on db.
func NewRefreshTokenStore(db bun.IDB) *RefreshTokenStore { return &RefreshTokenStore{db: db} }

// CreateRefreshToken inserts t; an existing id or hash is ErrConflict.
func (s *RefreshTokenStore) CreateRefreshToken(ctx context.Context, t *access.RefreshToken) error {
	if _, err := s.db.NewInsert().Model(refreshToRow(t)).Exec(ctx); err != nil {
		return conflict(err, "create refresh token "+t.ID)
	}
	return nil
}

// useRefreshToken locks the row (the CTE's FOR UPDATE), sets used_at unless
// it is set and returns the row as the lock found it. A concurrent caller
// waits for the lock and then reads the committed row, with used_at set.
const useRefreshToken = `WITH old AS (
    SELECT * FROM refresh_tokens WHERE hash = ? FOR UPDATE
)
UPDATE refresh_tokens AS t SET used_at = COALESCE(t.used_at, ?)
FROM old WHERE t.id = old.id
RETURNING old.id, old.family_id, old.user_id, old.org_id, old.hash,
    old.created_at, old.expires_at, old.used_at, old.revoked_at,
    old.access_token_id, old.access_expires_at`

// UseRefreshToken marks the token with this hash used at `at` (if it was not
// already) and returns it as it was before, in one statement.
func (s *RefreshTokenStore) UseRefreshToken(ctx context.Context, hash string, at time.Time) (*access.RefreshToken, error) {
	var r refreshRow
	if err := s.db.NewRaw(useRefreshToken, hash, utc(at)).Scan(ctx, &r); err != nil {
		return nil, notFound(err, "use refresh token")
	}
	return r.token(), nil
}

// RevokeFamily revokes every token of the family that is not revoked yet.
func (s *RefreshTokenStore) RevokeFamily(ctx context.Context, familyID string, at time.Time) error {
	_, err := s.db.NewUpdate().Model((*refreshRow)(nil)).
		Set("revoked_at = ?", utc(at)).
		Where("family_id = ?", familyID).
		Where("revoked_at IS NULL").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("postgres: revoke refresh token family %s: %w", familyID, err)
	}
	return nil
}

// RevokeUserTokens revokes every token of the user that is not revoked yet.
func (s *RefreshTokenStore) RevokeUserTokens(ctx context.Context, userID string, at time.Time) error {
	_, err := s.db.NewUpdate().Model((*refreshRow)(nil)).
		Set("revoked_at = ?", utc(at)).
		Where("user_id = ?", userID).
		Where("revoked_at IS NULL").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("postgres: revoke refresh tokens of user %s: %w", userID, err)
	}
	return nil
}

// FamilyAccessTokens returns the access tokens issued with the family's
// refresh tokens that expire after `after`.
func (s *RefreshTokenStore) FamilyAccessTokens(ctx context.Context, familyID string, after time.Time) ([]access.DeniedToken, error) {
	return s.accessTokens(ctx, "family_id", familyID, after)
}

// UserAccessTokens returns the user's access tokens that expire after
// `after`.
func (s *RefreshTokenStore) UserAccessTokens(ctx context.Context, userID string, after time.Time) ([]access.DeniedToken, error) {
	return s.accessTokens(ctx, "user_id", userID, after)
}

func (s *RefreshTokenStore) accessTokens(ctx context.Context, col, id string, after time.Time) ([]access.DeniedToken, error) {
	var rows []refreshRow
	err := s.db.NewSelect().Model(&rows).Column("access_token_id", "access_expires_at").
		Where("? = ?", bun.Ident(col), id).Where("access_token_id <> ''").Where("access_expires_at > ?", utc(after)).
		Scan(ctx)
	if err != nil {
		return nil, fail(err, "list access tokens by "+col)
	}
	out := make([]access.DeniedToken, 0, len(rows))
	for _, r := range rows {
		out = append(out, access.DeniedToken{ID: r.AccessTokenID, ExpiresAt: utc(*r.AccessExpiresAt)})
	}
	return out, nil
}
