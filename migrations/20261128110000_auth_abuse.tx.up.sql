-- Login throttling shared by every replica: failures per account and client
-- address together (key is a hash of both; neither is stored).
CREATE TABLE login_failures (
    key        text PRIMARY KEY,
    count      integer NOT NULL,
    last_at    timestamptz NOT NULL
);
--bun:split
CREATE INDEX login_failures_last_idx ON login_failures (last_at);
--bun:split
-- The access token issued with each refresh token, so that revoking a
-- session can deny its access tokens at once.
ALTER TABLE refresh_tokens ADD COLUMN access_token_id text NOT NULL DEFAULT '';
--bun:split
ALTER TABLE refresh_tokens ADD COLUMN access_expires_at timestamptz;
--bun:split
-- Access tokens revoked before their expiry; kept until they expire.
CREATE TABLE denied_tokens (
    id         text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
--bun:split
CREATE INDEX denied_tokens_expires_idx ON denied_tokens (expires_at);
--bun:split
-- Single-use invitations to register (ENRICH_REGISTRATION=invite); only a
-- token's hash is stored. org_id NULL: registering creates a new
-- organization.
CREATE TABLE invitations (
    id          text PRIMARY KEY,
    org_id      text REFERENCES organizations (id) ON DELETE CASCADE,
    email       text NOT NULL DEFAULT '',
    role        text NOT NULL,
    hash        text NOT NULL UNIQUE,
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    used_by     text NOT NULL DEFAULT '',
    revoked_at  timestamptz
);
--bun:split
CREATE INDEX invitations_org_idx ON invitations (org_id, created_at, id);
