-- Database credentials (issue 28): a registration's consumer holds a
-- refresh token (only its SHA-256 is kept) and exchanges it for
-- short-lived access tokens. At most one active credential per
-- registration.
CREATE TABLE database_credentials (
    id                   text PRIMARY KEY,
    org_id               text NOT NULL,
    database_id          text NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
    hash                 text NOT NULL UNIQUE,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    revoked_at           timestamptz,
    last_seen_at         timestamptz,
    last_seen_ip         text NOT NULL DEFAULT '',
    last_seen_user_agent text NOT NULL DEFAULT '',
    last_apply_delta_id  bigint
);
--bun:split
CREATE UNIQUE INDEX database_credentials_active_idx ON database_credentials (database_id) WHERE revoked_at IS NULL;
--bun:split
CREATE INDEX database_credentials_database_idx ON database_credentials (database_id, created_at DESC);
--bun:split
-- The access tokens exchanged for a credential, so that revoking it
-- denies the live ones (the access-token denylist names tokens by id).
CREATE TABLE database_credential_tokens (
    credential_id text NOT NULL REFERENCES database_credentials (id) ON DELETE CASCADE,
    jti           text NOT NULL,
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (credential_id, jti)
);
