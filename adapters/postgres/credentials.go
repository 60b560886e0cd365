package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.CredentialStore = (*CredentialStore)(nil)

// CredentialStore keeps database credentials in database_credentials and
// their access tokens in database_credential_tokens.
type CredentialStore struct{ db bun.IDB }

// NewCredentialStore returns the store on db.
func NewCredentialStore(db bun.IDB) *CredentialStore { return &CredentialStore{db: db} }

type credRow struct {
	bun.BaseModel `bun:"table:database_credentials"`

	ID                string     `bun:"id,pk"`
	OrgID             string     `bun:"org_id,notnull"`
	DatabaseID        string     `bun:"database_id,notnull"`
	Hash              string     `bun:"hash,notnull"`
	CreatedAt         time.Time  `bun:"created_at,notnull"`
	UpdatedAt         time.Time  `bun:"updated_at,notnull"`
	RevokedAt         *time.Time `bun:"revoked_at"`
	LastSeenAt        *time.Time `bun:"last_seen_at"`
	LastSeenIP        string     `bun:"last_seen_ip,notnull"`
	LastSeenUserAgent string     `bun:"last_seen_user_agent,notnull"`
	LastApplyDeltaID  *int64     `bun:"last_apply_delta_id"`
	DatabaseName      string     `bun:"database_name,scanonly"`
}

func (r *credRow) credential() *dbsync.Credential {
	return &dbsync.Credential{ID: r.ID, OrgID: r.OrgID, DatabaseID: r.DatabaseID, DatabaseName: r.DatabaseName, Hash: r.Hash,
		CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt), RevokedAt: utcPtr(r.RevokedAt), LastSeenAt: utcPtr(r.LastSeenAt),
		LastSeenIP: r.LastSeenIP, LastSeenUserAgent: r.LastSeenUserAgent, LastApplyDeltaID: r.LastApplyDeltaID}
}

// databaseName reads (and, with lock, locks) the organization's
// registration.
func databaseName(ctx context.Context, db bun.IDB, orgID, id string, lock bool) (string, error) {
	q := `SELECT name FROM databases WHERE id = ? AND org_id = ?`
	if lock {
		q += ` FOR UPDATE`
	}
	var name string
	err := db.NewRaw(q, id, orgID).Scan(ctx, &name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("postgres: database %s: %w", id, ports.ErrNotFound)
	}
	if err != nil {
		return "", fail(err, "read database "+id)
	}
	return name, nil
}

// CreateCredential locks the registration, revokes its active credential
// and inserts c, in one transaction.
func (s *CredentialStore) CreateCredential(ctx context.Context, c *dbsync.Credential) (*dbsync.Credential, error) {
	var replaced *dbsync.Credential
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		name, err := databaseName(ctx, tx, c.OrgID, c.DatabaseID, true)
		if err != nil {
			return err
		}
		var old []credRow
		at := utc(c.CreatedAt)
		if err := tx.NewRaw(`UPDATE database_credentials SET revoked_at = ?, updated_at = ?
			WHERE database_id = ? AND revoked_at IS NULL RETURNING *`, at, at, c.DatabaseID).Scan(ctx, &old); err != nil {
			return fail(err, "revoke the credential of database "+c.DatabaseID)
		}
		if len(old) > 0 {
			replaced = old[0].credential()
		}
		row := &credRow{ID: c.ID, OrgID: c.OrgID, DatabaseID: c.DatabaseID, Hash: c.Hash, CreatedAt: at, UpdatedAt: utc(c.UpdatedAt)}
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return conflict(err, "create credential "+c.ID)
		}
		c.DatabaseName = name
		return nil
	})
	return replaced, err
}

func (s *CredentialStore) LatestCredential(ctx context.Context, orgID, databaseID string) (*dbsync.Credential, error) {
	if _, err := databaseName(ctx, s.db, orgID, databaseID, false); err != nil {
		return nil, err
	}
	var rows []credRow
	if err := s.db.NewRaw(`SELECT * FROM database_credentials WHERE database_id = ? AND org_id = ?
		ORDER BY created_at DESC, id DESC LIMIT 1`, databaseID, orgID).Scan(ctx, &rows); err != nil {
		return nil, fail(err, "read the credential of database "+databaseID)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return rows[0].credential(), nil
}

func (s *CredentialStore) RevokeCredential(ctx context.Context, orgID, databaseID string, at time.Time) (*dbsync.Credential, error) {
	var rows []credRow
	at = utc(at)
	if err := s.db.NewRaw(`UPDATE database_credentials SET revoked_at = ?, updated_at = ?
		WHERE database_id = ? AND org_id = ? AND revoked_at IS NULL RETURNING *`, at, at, databaseID, orgID).Scan(ctx, &rows); err != nil {
		return nil, fail(err, "revoke the credential of database "+databaseID)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("postgres: active credential of database %s: %w", databaseID, ports.ErrNotFound)
	}
	return rows[0].credential(), nil
}

// exchangeQuery notes the use on the active credential (locking its row
// until the statement ends, so a revocation waits for the token's row),
// records the access token and drops the credential's expired ones: one
// statement, one round trip.
const exchangeQuery = `WITH c AS (
	UPDATE database_credentials c SET last_seen_at = ?, last_seen_ip = ?, last_seen_user_agent = ?, updated_at = ?
	FROM databases d WHERE c.hash = ? AND c.revoked_at IS NULL AND d.id = c.database_id
	RETURNING c.*, d.name AS database_name
), t AS (
	INSERT INTO database_credential_tokens (credential_id, jti, expires_at) SELECT c.id, ?, ? FROM c
), p AS (
	DELETE FROM database_credential_tokens x USING c WHERE x.credential_id = c.id AND x.expires_at < ?
)
SELECT * FROM c`

func (s *CredentialStore) ExchangeCredential(ctx context.Context, hash string, seen dbsync.Seen, tok access.DeniedToken) (*dbsync.Credential, error) {
	var rows []credRow
	at := utc(seen.At)
	if err := s.db.NewRaw(exchangeQuery, at, seen.IP, seen.UserAgent, at, hash, tok.ID, utc(tok.ExpiresAt), at).
		Scan(ctx, &rows); err != nil {
		return nil, fail(err, "exchange a database credential")
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("postgres: credential: %w", ports.ErrNotFound)
	}
	return rows[0].credential(), nil
}

func (s *CredentialStore) CredentialTokens(ctx context.Context, id string, after time.Time) ([]access.DeniedToken, error) {
	var rows []struct {
		JTI       string    `bun:"jti"`
		ExpiresAt time.Time `bun:"expires_at"`
	}
	if err := s.db.NewRaw(`SELECT jti, expires_at FROM database_credential_tokens WHERE credential_id = ? AND expires_at > ?`,
		id, utc(after)).Scan(ctx, &rows); err != nil {
		return nil, fail(err, "list the tokens of credential "+id)
	}
	out := make([]access.DeniedToken, len(rows))
	for i, r := range rows {
		out[i] = access.DeniedToken{ID: r.JTI, ExpiresAt: utc(r.ExpiresAt)}
	}
	return out, nil
}

func (s *CredentialStore) NoteCredentialSeen(ctx context.Context, id string, seen dbsync.Seen) error {
	at := utc(seen.At)
	_, err := s.db.NewRaw(`UPDATE database_credentials SET last_seen_at = ?, last_seen_ip = ?, last_seen_user_agent = ?,
		updated_at = ? WHERE id = ? AND revoked_at IS NULL`, at, seen.IP, seen.UserAgent, at, id).Exec(ctx)
	if err != nil {
		return fail(err, "note the use of credential "+id)
	}
	return nil
}

func (s *CredentialStore) NoteCredentialApplied(ctx context.Context, databaseID string, upTo int64) error {
	_, err := s.db.NewRaw(`UPDATE database_credentials SET last_apply_delta_id = ? WHERE database_id = ?
		AND revoked_at IS NULL AND coalesce(last_apply_delta_id, -1) < ?`, upTo, databaseID, upTo).Exec(ctx)
	if err != nil {
		return fail(err, "note the ack of database "+databaseID)
	}
	return nil
}
